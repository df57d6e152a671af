//! fio job files as text: `[sections]` of `key=value` lines, `;` and `#` comments (whole lines,
//! and from either character to the end of an option line, as fio strips them), `include FILE`
//! inside a section (relative to the including file; loops and missing files are errors),
//! `${VAR}` from the environment and fio's `$pagesize`, `$mb_memory`, `$ncpus` with the
//! integer arithmetic fio hands to bc. Every option keeps the file and line it came from.

use super::{Env, Loc, Problem};
use std::path::{Path, PathBuf};

/// Includes nest at most this deep (a loop is caught before; this bounds a long chain).
const MAX_DEPTH: usize = 16;
/// Longest job file read (fio's own jobs are a few KiB).
pub const MAX_FILE_BYTES: usize = 4 << 20;

/// One `key[=value]` line.
#[derive(Debug, Clone, PartialEq)]
pub struct Opt {
    pub key: String,
    pub value: Option<String>,
    pub at: Loc,
    /// The value names an environment variable that is not set: why the option is not read
    /// (the mapping says so where the option's job is mapped, beside its other problems).
    pub unset: Option<String>,
}

/// One `[name]` section and its options, includes expanded.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub name: String,
    pub at: Loc,
    pub opts: Vec<Opt>,
}

impl Section {
    pub fn is_global(&self) -> bool {
        self.name == "global"
    }
}

/// Read a job file and everything it includes into sections.
pub fn read(path: &Path, env: &dyn Env) -> Result<Vec<Section>, Problem> {
    let text = load(path, env, None)?;
    let mut sections: Vec<Section> = Vec::new();
    let mut stack = vec![identity(path, env)];
    for (i, raw) in text.lines().enumerate() {
        let at = Loc { file: path.to_path_buf(), line: i + 1 };
        let line = raw.trim();
        if is_comment(line) {
            continue;
        }
        if line.starts_with('[') {
            sections.push(Section { name: section_name(line, &at)?, at, opts: Vec::new() });
            continue;
        }
        let Some(current) = sections.last_mut() else {
            return Err(Problem::new(
                at,
                format!("`{line}` comes before any [section]; fio job files start with [global] or a [job] line"),
            ));
        };
        option_line(line, at, path, env, &mut stack, &mut current.opts)?;
    }
    Ok(sections)
}

fn is_comment(line: &str) -> bool {
    line.is_empty() || line.starts_with(';') || line.starts_with('#')
}

fn section_name(line: &str, at: &Loc) -> Result<String, Problem> {
    if line.starts_with("[[") {
        return Err(Problem::new(
            at.clone(),
            "`[[` opens a TOML table, not a fio section; is this an iolab TOML job file? (--format toml)".into(),
        ));
    }
    let Some(inner) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) else {
        return Err(Problem::new(at.clone(), format!("unclosed section `{line}`: a section line is [name]")));
    };
    let name = inner.trim();
    if name.is_empty() || name.contains(['[', ']']) {
        return Err(Problem::new(at.clone(), format!("`{line}` is not a section name")));
    }
    Ok(name.to_string())
}

/// An option line (or an include) inside a section.
fn option_line(
    line: &str,
    at: Loc,
    file: &Path,
    env: &dyn Env,
    stack: &mut Vec<PathBuf>,
    out: &mut Vec<Opt>,
) -> Result<(), Problem> {
    // fio cuts an option line at its first `;` or `#`.
    let line = line.split([';', '#']).next().unwrap_or("").trim();
    if line.is_empty() {
        return Ok(());
    }
    if let Some(rest) = line.strip_prefix("include").filter(|r| r.starts_with(char::is_whitespace)) {
        return include(rest.trim(), at, file, env, stack, out);
    }
    let (key, value, unset) = match line.split_once('=') {
        Some((k, v)) => match unset_var(v.trim(), env) {
            Some(name) => (k.trim(), None, Some(format!("`${{{name}}}` is not set in the environment (fio would put nothing there); set it or write the value"))),
            None => (k.trim(), Some(substitute(k.trim(), v.trim(), &at, env)?), None),
        },
        None => (line, None, None),
    };
    if key.is_empty() || key.contains(char::is_whitespace) {
        return Err(Problem::new(at, format!("`{line}` is not an option; write name=value")));
    }
    out.push(Opt { key: key.to_string(), value, at, unset });
    Ok(())
}

fn include(
    name: &str,
    at: Loc,
    from: &Path,
    env: &dyn Env,
    stack: &mut Vec<PathBuf>,
    out: &mut Vec<Opt>,
) -> Result<(), Problem> {
    if name.is_empty() {
        return Err(Problem::new(at, "`include` needs a file name".into()));
    }
    // init.c: fio takes the name as given when it exists (from the current directory), and
    // only then looks beside the including file (fio 3.33 read ./inc.fio before
    // ../A/inc.fio for ../A/main.fio's `include inc.fio`).
    let path = match Path::new(name) {
        p if p.is_absolute() || env.read(p).is_ok() => p.to_path_buf(),
        p => from.parent().unwrap_or(Path::new("")).join(p),
    };
    let id = identity(&path, env);
    if let Some(first) = stack.iter().position(|s| *s == id) {
        let chain: Vec<String> = stack[first..].iter().chain([&id]).map(|p| p.display().to_string()).collect();
        return Err(Problem::new(at, format!("include loop: {}", chain.join(" -> "))));
    }
    if stack.len() > MAX_DEPTH {
        return Err(Problem::new(at, format!("includes nest deeper than {MAX_DEPTH} files")));
    }
    let text = load(&path, env, Some(&at))?;
    stack.push(id);
    for (i, raw) in text.lines().enumerate() {
        let here = Loc { file: path.clone(), line: i + 1 };
        let line = raw.trim();
        if is_comment(line) {
            continue;
        }
        if line.starts_with('[') {
            return Err(Problem::new(
                here,
                format!("an included file holds options only, not sections (`{line}`; fio refuses them too)"),
            ));
        }
        option_line(line, here, &path, env, stack, out)?;
    }
    stack.pop();
    Ok(())
}

/// The path a loop is detected on: canonical where the file exists.
fn identity(path: &Path, env: &dyn Env) -> PathBuf {
    env.canonical(path).unwrap_or_else(|| path.to_path_buf())
}

fn load(path: &Path, env: &dyn Env, included_at: Option<&Loc>) -> Result<String, Problem> {
    let text = env.read(path).map_err(|e| {
        let what = format!("cannot read {}: {e}", path.display());
        match included_at {
            Some(at) => Problem::new(at.clone(), format!("include: {what}")),
            None => Problem::new(Loc { file: path.to_path_buf(), line: 0 }, what),
        }
    })?;
    if text.len() > MAX_FILE_BYTES {
        let at = included_at.cloned().unwrap_or(Loc { file: path.to_path_buf(), line: 0 });
        return Err(Problem::new(
            at,
            format!("{} is larger than {} MiB; not a job file", path.display(), MAX_FILE_BYTES >> 20),
        ));
    }
    Ok(text)
}

/// Options whose value is text (a path, a name, a log prefix): fio keeps a `$word` it does not
/// know there as written (fio 3.33 names a file `x.$jobnum` for `filename=x.$jobnum`).
fn takes_text(key: &str) -> bool {
    matches!(
        key,
        "filename"
            | "directory"
            | "filename_format"
            | "name"
            | "description"
            | "opendir"
            | "write_bw_log"
            | "write_lat_log"
            | "write_iops_log"
            | "write_hist_log"
            | "verify_pattern"
    )
}

/// The first `${NAME}` in `value` that the environment does not set.
fn unset_var(value: &str, env: &dyn Env) -> Option<String> {
    let mut rest = value;
    while let Some(i) = rest.find("${") {
        let inner = &rest[i + 2..];
        let end = inner.find('}')?;
        let name = &inner[..end];
        if env.var(name).is_none() {
            return Some(name.to_string());
        }
        rest = &inner[end + 1..];
    }
    None
}

/// `${VAR}` from the environment, fio's reserved `$pagesize`, `$mb_memory` and `$ncpus`, and,
/// when a reserved word was replaced, the integer arithmetic fio has bc do (`size=8*$mb_memory`).
/// An unset variable is an error: fio would put nothing there, and `filename=${DIR}/f` would
/// become `/f`. Any other `$word` stays as written in a text option, as fio keeps it (the
/// `filename_format` keywords are expanded by the mapping), and is an error elsewhere.
fn substitute(key: &str, value: &str, at: &Loc, env: &dyn Env) -> Result<String, Problem> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    let mut keyword = false;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(inner) = tail.strip_prefix("${") {
            let Some(end) = inner.find('}') else {
                return Err(Problem::new(at.clone(), format!("`{value}`: `${{` without its `}}`")));
            };
            let name = &inner[..end];
            match env.var(name) {
                Some(v) => out.push_str(&v),
                None => {
                    return Err(Problem::new(
                        at.clone(),
                        format!("`${{{name}}}` is not set in the environment (fio would put nothing there); set it or write the value"),
                    ))
                }
            }
            rest = &inner[end + 1..];
            continue;
        }
        let word_len = tail[1..].find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(tail.len(), |n| n + 1);
        let word = &tail[..word_len];
        match env.keyword(word) {
            Some(n) => {
                out.push_str(&n.to_string());
                keyword = true;
            }
            None if takes_text(key) => out.push_str(word),
            None => {
                return Err(Problem::new(
                    at.clone(),
                    format!(
                        "`{word}`: in an option's value fio substitutes only ${{NAME}} from the environment and $pagesize, $mb_memory, $ncpus (and $jobname, $jobnum, $filenum, $clientuid in filename_format); it would keep `{word}` as text, which {key} does not take"
                    ),
                ))
            }
        }
        rest = &tail[word_len..];
    }
    out.push_str(rest);
    if keyword && out.contains(['+', '-', '*', '/']) {
        return arithmetic(&out)
            .map(|n| n.to_string())
            .map_err(|e| Problem::new(at.clone(), format!("`{value}`: {e}")));
    }
    Ok(out)
}

/// Whole-number arithmetic with + - * / and parentheses, as bc does it for fio.
fn arithmetic(expr: &str) -> Result<i64, String> {
    struct P<'a> {
        s: &'a [u8],
        i: usize,
        depth: u32,
    }
    impl P<'_> {
        fn ws(&mut self) {
            while self.s.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
                self.i += 1;
            }
        }
        fn expr(&mut self) -> Result<i64, String> {
            let mut v = self.term()?;
            loop {
                self.ws();
                match self.s.get(self.i) {
                    Some(b'+') => {
                        self.i += 1;
                        v = v.checked_add(self.term()?).ok_or("too large")?;
                    }
                    Some(b'-') => {
                        self.i += 1;
                        v = v.checked_sub(self.term()?).ok_or("too large")?;
                    }
                    _ => return Ok(v),
                }
            }
        }
        fn term(&mut self) -> Result<i64, String> {
            let mut v = self.atom()?;
            loop {
                self.ws();
                match self.s.get(self.i) {
                    Some(b'*') => {
                        self.i += 1;
                        v = v.checked_mul(self.atom()?).ok_or("too large")?;
                    }
                    Some(b'/') => {
                        self.i += 1;
                        let d = self.atom()?;
                        v = v.checked_div(d).ok_or("division by zero")?;
                    }
                    _ => return Ok(v),
                }
            }
        }
        fn atom(&mut self) -> Result<i64, String> {
            self.ws();
            match self.s.get(self.i) {
                Some(b'(') => {
                    self.depth += 1;
                    if self.depth > 32 {
                        return Err("parentheses nest too deep".into());
                    }
                    self.i += 1;
                    let v = self.expr()?;
                    self.ws();
                    if self.s.get(self.i) != Some(&b')') {
                        return Err("a `(` without its `)`".into());
                    }
                    self.i += 1;
                    self.depth -= 1;
                    Ok(v)
                }
                Some(b'-') => {
                    self.i += 1;
                    self.atom()?.checked_neg().ok_or_else(|| "too large".into())
                }
                _ => {
                    let start = self.i;
                    while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
                        self.i += 1;
                    }
                    std::str::from_utf8(&self.s[start..self.i])
                        .ok()
                        .and_then(|t| t.parse().ok())
                        .ok_or_else(|| "not a whole-number expression (bc's + - * / and parentheses)".into())
                }
            }
        }
    }
    let mut p = P { s: expr.as_bytes(), i: 0, depth: 0 };
    let v = p.expr()?;
    p.ws();
    if p.i != p.s.len() {
        return Err("not a whole-number expression (bc's + - * / and parentheses)".into());
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_is_bc_integer_math() {
        assert_eq!(arithmetic("8*1024"), Ok(8192));
        assert_eq!(arithmetic("(2+3)*4 - 1"), Ok(19));
        assert_eq!(arithmetic("7/2"), Ok(3));
        assert!(arithmetic("1/0").is_err());
        assert!(arithmetic("2*").is_err());
        assert!(arithmetic("4k*2").is_err());
        assert!(arithmetic(&"(".repeat(100)).is_err());
    }
}
