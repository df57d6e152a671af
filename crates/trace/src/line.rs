//! One line of strace text, taken apart without copying: the pid prefix (`PID  ` or
//! `[pid N] `), the timestamp (`-t`, `-tt`, `-ttt`), the call with its arguments, its return
//! value and its `-T` duration, or the `<unfinished ...>` / `<... resumed>` halves, exits and
//! signals. Anything else is an error in words, never a panic.

use std::cell::Cell;

/// What a line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body<'a> {
    /// A whole call: `name(args) = ret <dur>`.
    Call { name: &'a str, args: &'a str, ret: &'a str },
    /// `name(args <unfinished ...>`.
    Unfinished { name: &'a str, args: &'a str },
    /// `<... name resumed>rest) = ret <dur>`: `rest` is the tail of the arguments.
    Resumed { name: &'a str, rest: &'a str, ret: &'a str },
    /// `+++ exited with N +++` or `+++ killed by SIG +++`.
    Exit,
    /// `--- SIGCHLD {...} ---`.
    Signal,
}

/// A parsed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<'a> {
    pub pid: Option<u32>,
    /// Nanoseconds: since the epoch (`-ttt`) or since midnight (`-t`, `-tt`).
    pub time_ns: Option<u64>,
    /// `-T`: the call's duration in nanoseconds.
    pub dur_ns: Option<u64>,
    pub body: Body<'a>,
}

/// Why a line was not understood.
pub type LineError = &'static str;

/// The ASCII bytes `str::trim` takes off (it takes `\x0b` too, which `trim_ascii` keeps).
fn ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `str::trim_start`, byte by byte while the bytes are ASCII (a non-ASCII byte at the edge
/// leaves the rest to `str::trim_start`, which knows Unicode's spaces).
#[inline]
pub fn trim_start(s: &str) -> &str {
    let i = s.bytes().take_while(|&b| ws(b)).count();
    let t = &s[i..];
    if t.as_bytes().first().is_some_and(|&b| b >= 0x80) {
        t.trim_start()
    } else {
        t
    }
}

/// `str::trim_end`, the same way.
#[inline]
pub fn trim_end(s: &str) -> &str {
    let j = s.len() - s.bytes().rev().take_while(|&b| ws(b)).count();
    let t = &s[..j];
    if t.as_bytes().last().is_some_and(|&b| b >= 0x80) {
        t.trim_end()
    } else {
        t
    }
}

/// `str::trim`, the same way.
#[inline]
pub fn trim(s: &str) -> &str {
    trim_end(trim_start(s))
}

/// The first `x` in `b`, for a byte expected within a few dozen: a plain loop, which beats
/// memchr's dispatch on the short pieces a line is cut into.
#[inline]
fn find_near(b: &[u8], x: u8) -> Option<usize> {
    b.iter().position(|&c| c == x)
}

/// The last `x` in `b`, expected near its end.
#[inline]
fn rfind_near(b: &[u8], x: u8) -> Option<usize> {
    b.iter().rposition(|&c| c == x)
}

/// A pid's digits as a number (up to 9 digits without `str::parse`).
fn pid_of(d: &str) -> Result<u32, LineError> {
    let b = d.as_bytes();
    if (1..=9).contains(&b.len()) && b.iter().all(u8::is_ascii_digit) {
        return Ok(b.iter().fold(0u32, |v, &c| v * 10 + u32::from(c - b'0')));
    }
    d.parse().map_err(|_| "a pid that is not a number")
}

fn digits(s: &[u8]) -> usize {
    s.iter().take_while(|b| b.is_ascii_digit()).count()
}

/// Parse `S.FFFFFF` (or `S`) into nanoseconds.
pub fn parse_seconds(s: &str) -> Option<u64> {
    match seconds_prefix(s.as_bytes()) {
        (v, n) if n == s.len() => v,
        _ => None,
    }
}

/// The longest start of `b` of the form `S` or `S.F` (digits, a dot, digits), read in one
/// pass: its length and its value in nanoseconds (`None` if empty or too large).
fn seconds_prefix(b: &[u8]) -> (Option<u64>, usize) {
    let mut int = 0;
    let mut secs: u64 = 0;
    let mut overflow = false;
    while let Some(d) = b.get(int).filter(|d| d.is_ascii_digit()) {
        let d = u64::from(d - b'0');
        // 19 digits cannot overflow a u64; past them, check.
        if int < 19 {
            secs = secs * 10 + d;
        } else {
            match secs.checked_mul(10).and_then(|v| v.checked_add(d)) {
                Some(v) => secs = v,
                None => overflow = true,
            }
        }
        int += 1;
    }
    if int == 0 {
        return (None, 0);
    }
    let mut n = int;
    let mut ns: u64 = 0;
    if b.get(n) == Some(&b'.') {
        n += 1;
        // The first nine digits are the nanoseconds; the rest are read and dropped.
        let mut kept = 0;
        while let Some(d) = b.get(n).filter(|d| d.is_ascii_digit()) {
            if kept < 9 {
                ns = ns * 10 + u64::from(d - b'0');
                kept += 1;
            }
            n += 1;
        }
        ns *= [1_000_000_000, 100_000_000, 10_000_000, 1_000_000, 100_000, 10_000, 1_000, 100, 10, 1][kept];
    }
    let v = if overflow { None } else { secs.checked_mul(1_000_000_000).and_then(|v| v.checked_add(ns)) };
    (v, n)
}

/// `HH:MM:SS[.ffffff]` into nanoseconds since midnight.
fn parse_clock(s: &str) -> Option<u64> {
    let mut it = s.splitn(3, ':');
    let h: u64 = it.next()?.parse().ok()?;
    let m: u64 = it.next()?.parse().ok()?;
    let rest = it.next()?;
    let sec = parse_seconds(rest)?;
    if h > 23 || m > 59 || sec >= 61_000_000_000 {
        return None;
    }
    Some((h * 3600 + m * 60) * 1_000_000_000 + sec)
}

/// Take apart one line (without its newline).
pub fn parse(line: &str) -> Result<Line<'_>, LineError> {
    let mut s = line;
    while let Some(rest) = s.strip_suffix(|c| c == '\r' || c == '\n') {
        s = rest;
    }
    let mut pid = None;
    // `[pid N] ` prefix (strace writing to its stderr).
    if let Some(rest) = s.strip_prefix("[pid ") {
        let rest = trim_start(rest);
        let n = digits(rest.as_bytes());
        let after = &rest[n..];
        let Some(after) = after.strip_prefix(']') else { return Err("a `[pid N]` prefix without its `]`") };
        pid = Some(pid_of(&rest[..n])?);
        s = trim_start(after);
    } else {
        // `PID  ` prefix (-f with -o): digits then a space.
        let n = digits(s.as_bytes());
        if n > 0 && s.as_bytes().get(n) == Some(&b' ') {
            pid = Some(pid_of(&s[..n])?);
            s = trim_start(&s[n..]);
        }
    }
    // Timestamp.
    let mut time_ns = None;
    if s.as_bytes().first().is_some_and(u8::is_ascii_digit) {
        // `-ttt`: seconds then a space, in one pass.
        let (secs, n) = seconds_prefix(s.as_bytes());
        if s.as_bytes().get(n) == Some(&b' ') {
            time_ns = Some(secs.ok_or("a timestamp that is not one")?);
            s = trim_start(&s[n..]);
        }
    }
    if time_ns.is_none() && s.as_bytes().first().is_some_and(u8::is_ascii_digit) {
        let end = find_near(s.as_bytes(), b' ').ok_or("a timestamp with nothing after it")?;
        let ts = &s[..end];
        time_ns = Some(
            // `S.F` has no `:` and `HH:MM:SS` has two: each parser fails on the other's form.
            parse_seconds(ts).or_else(|| parse_clock(ts)).ok_or("a timestamp that is not one")?,
        );
        s = trim_start(&s[end..]);
    }
    if s.starts_with("+++ ") {
        return Ok(Line { pid, time_ns, dur_ns: None, body: Body::Exit });
    }
    if s.starts_with("--- ") {
        return Ok(Line { pid, time_ns, dur_ns: None, body: Body::Signal });
    }
    if let Some(rest) = s.strip_prefix("<... ") {
        let end = memchr::memmem::find(rest.as_bytes(), b" resumed>").ok_or("a `<...` without ` resumed>`")?;
        let name = &rest[..end];
        if !is_name(name) {
            return Err("a resumed call whose name is not a syscall name");
        }
        let tail = &rest[end + " resumed>".len()..];
        let (rest, ret, dur_ns) = split_result(tail)?;
        return Ok(Line { pid, time_ns, dur_ns, body: Body::Resumed { name, rest, ret } });
    }
    let open = find_near(s.as_bytes(), b'(').ok_or("no call on the line")?;
    let name = &s[..open];
    if !is_name(name) {
        return Err("a call whose name is not a syscall name");
    }
    let after = &s[open + 1..];
    if let Some(args) = after.strip_suffix(" <unfinished ...>") {
        return Ok(Line { pid, time_ns, dur_ns: None, body: Body::Unfinished { name, args } });
    }
    let (args, ret, dur_ns) = split_result(after)?;
    Ok(Line { pid, time_ns, dur_ns, body: Body::Call { name, args, ret } })
}

fn is_name(s: &str) -> bool {
    !s.is_empty() && s.len() < 40 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Where the last ` = ` starts.
fn rfind_eq(b: &[u8]) -> Option<usize> {
    let mut end = b.len();
    while let Some(i) = rfind_near(&b[..end], b'=') {
        if i >= 1 && b.get(i - 1) == Some(&b' ') && b.get(i + 1) == Some(&b' ') {
            return Some(i - 1);
        }
        end = i;
    }
    None
}

/// Split `args) = ret <dur>` into its parts.
fn split_result(s: &str) -> Result<(&str, &str, Option<u64>), LineError> {
    let eq = rfind_eq(s.as_bytes()).ok_or("a call without `) = ` (a truncated line?)")?;
    let args = trim_end(&s[..eq]).strip_suffix(')').ok_or("a call without `) = ` (a truncated line?)")?;
    let mut ret = trim_end(&s[eq + 3..]);
    let mut dur_ns = None;
    if ret.ends_with('>') {
        if let Some(lt) =
            rfind_near(ret.as_bytes(), b'<').filter(|&i| i > 0 && ret.as_bytes()[i - 1] == b' ').map(|i| i - 1)
        {
            if let Some(d) = parse_seconds(&ret[lt + 2..ret.len() - 1]) {
                dur_ns = Some(d);
                ret = &ret[..lt];
            }
        }
    }
    if ret.is_empty() {
        return Err("a call with an empty return value");
    }
    Ok((args, ret, dur_ns))
}

/// A return value: the number (decimal or hex) and, for a failure, the errno name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ret<'a> {
    /// `None` for `?` (the call did not return, as exit).
    pub value: Option<i64>,
    pub errno: Option<&'a str>,
    /// The `-y` path of a returned fd (`= 3</a/b>`), raw (still escaped).
    pub path: Option<&'a str>,
}

pub fn parse_ret(s: &str) -> Ret<'_> {
    let s = trim(s);
    let (num, rest) = match find_near(s.as_bytes(), b' ') {
        Some(i) => (&s[..i], trim_start(&s[i + 1..])),
        None => (s, ""),
    };
    let (num, path) = match find_near(num.as_bytes(), b'<') {
        Some(i) => {
            let p = rfind_near(&s.as_bytes()[i + 1..], b'>').map(|e| &s[i + 1..i + 1 + e]);
            (&num[..i], p)
        }
        None => (num, None),
    };
    let value = parse_int(num);
    let errno = if value == Some(-1) {
        Some(&rest[..find_near(rest.as_bytes(), b' ').unwrap_or(rest.len())]).filter(|e| e.starts_with('E'))
    } else {
        None
    };
    Ret { value, errno, path }
}

/// A decimal, hex (`0x`) or octal (`0NNN`) integer, possibly negative.
pub fn parse_int(s: &str) -> Option<i64> {
    // The common case, a short decimal without spaces, sign or leading zero, in one loop.
    if let [first @ b'1'..=b'9', rest @ ..] = s.as_bytes() {
        if rest.len() < 18 {
            let mut v = i64::from(first - b'0');
            let mut plain = true;
            for &d in rest {
                if !d.is_ascii_digit() {
                    plain = false;
                    break;
                }
                v = v * 10 + i64::from(d - b'0');
            }
            if plain {
                return Some(v);
            }
        }
    }
    if s == "0" {
        return Some(0);
    }
    let s = trim(s);
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let v = if let Some(h) = s.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()? as i64
    } else if s.len() > 1 && s.starts_with('0') && s.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        i64::from_str_radix(&s[1..], 8).ok()?
    } else {
        s.parse::<i64>().ok()?
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Split arguments at top-level commas: commas inside quotes, `[]`, `{}` and `()` stay.
pub fn split_args(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut quoted = false;
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if quoted {
            if c == b'\\' {
                i += 1;
            } else if c == b'"' {
                quoted = false;
            }
        } else {
            match c {
                b'"' => quoted = true,
                b'[' | b'{' | b'(' => depth += 1,
                b']' | b'}' | b')' => depth -= 1,
                b',' if depth <= 0 => {
                    out.push(trim(&s[start..i]));
                    start = i + 1;
                }
                _ => {}
            }
        }
        i += 1;
    }
    let last = trim(s.get(start..).unwrap_or(""));
    if !last.is_empty() || !out.is_empty() {
        out.push(last);
    }
    out
}

/// How many arguments [`Args`] takes apart: the importer reads no later one.
pub const ARGS: usize = 4;

/// Bytes that matter when splitting arguments outside quotes (the rest are skipped in a tight
/// loop): 1 a quote, 2 an opening bracket, 3 a closing one, 4 a comma.
const CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b'"' as usize] = 1;
    t[b'[' as usize] = 2;
    t[b'{' as usize] = 2;
    t[b'(' as usize] = 2;
    t[b']' as usize] = 3;
    t[b'}' as usize] = 3;
    t[b')' as usize] = 3;
    t[b',' as usize] = 4;
    t
};

/// The first [`ARGS`] arguments of a call, as [`split_args`] gives them (`""` past the last),
/// split lazily: an argument is looked for when it is first asked for, so a call whose first
/// argument is all that is read costs a scan to the first comma. No `Vec`; a quoted string is
/// skipped to its closing quote.
#[derive(Debug, Clone)]
pub struct Args<'a> {
    s: &'a str,
    parts: [Cell<&'a str>; ARGS],
    /// Arguments found so far.
    found: Cell<usize>,
    /// Where the next argument starts (past the end when there is none), and the bracket depth
    /// there.
    pos: Cell<usize>,
    depth: Cell<i32>,
}

/// The arguments of a call, split when asked for ([`Args::get`]).
pub fn first_args(s: &str) -> Args<'_> {
    Args { s, parts: Default::default(), found: Cell::new(0), pos: Cell::new(0), depth: Cell::new(0) }
}

impl<'a> Args<'a> {
    /// Argument `i` (from 0), or `""`; `i` must be below [`ARGS`].
    pub fn get(&self, i: usize) -> &'a str {
        debug_assert!(i < ARGS, "Args keeps {ARGS} arguments");
        while self.found.get() <= i && self.found.get() < ARGS && self.pos.get() <= self.s.len() {
            self.next_part();
        }
        self.parts.get(i).filter(|_| i < self.found.get()).map_or("", Cell::get)
    }

    /// Find the argument that starts at `pos`: up to the next comma outside quotes and
    /// brackets (a closing bracket too many counts as outside), or to the end.
    fn next_part(&self) {
        let (s, b) = (self.s, self.s.as_bytes());
        let start = self.pos.get();
        let mut depth = self.depth.get();
        let mut i = start;
        let end = loop {
            while i < b.len() && CLASS[usize::from(b[i])] == 0 {
                i += 1;
            }
            if i >= b.len() {
                break None;
            }
            match CLASS[usize::from(b[i])] {
                1 => {
                    // Inside quotes only `\` (which takes the next byte with it) and `"` count:
                    // a plain loop over the first bytes (an escape or a short string), then
                    // memchr2 (strace shows 32 bytes of a string unless told otherwise).
                    i += 1;
                    let plain = (i + 8).min(b.len());
                    while i < plain {
                        match b[i] {
                            b'\\' => i += 2,
                            b'"' => break,
                            _ => i += 1,
                        }
                    }
                    if i < b.len() && b[i] != b'"' {
                        while i < b.len() {
                            match memchr::memchr2(b'"', b'\\', &b[i..]) {
                                Some(k) if b[i + k] == b'\\' => i += k + 2,
                                Some(k) => {
                                    i += k;
                                    break;
                                }
                                None => i = b.len(),
                            }
                        }
                    }
                }
                2 => depth += 1,
                3 => depth -= 1,
                _ if depth <= 0 => break Some(i),
                _ => {}
            }
            i += 1;
        };
        let n = self.found.get();
        match end {
            Some(comma) => {
                self.parts[n].set(trim(&s[start..comma]));
                self.pos.set(comma + 1);
            }
            None => {
                self.parts[n].set(trim(s.get(start..).unwrap_or("")));
                self.pos.set(b.len() + 1);
            }
        }
        self.found.set(n + 1);
        self.depth.set(depth);
    }
}

/// An fd argument under `-y`: `3</a/b>`, `3</a/b>(deleted)`, `AT_FDCWD</cwd>`, or plain `3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdArg<'a> {
    /// `None` for AT_FDCWD.
    pub fd: Option<i64>,
    pub path: Option<&'a str>,
    pub deleted: bool,
}

pub fn parse_fd(s: &str) -> Option<FdArg<'_>> {
    let s = trim(s);
    let (head, path, deleted) = match find_near(s.as_bytes(), b'<') {
        Some(i) => {
            let tail = &s[i + 1..];
            let end = rfind_near(tail.as_bytes(), b'>')?;
            (&s[..i], Some(&tail[..end]), trim(&tail[end + 1..]) == "(deleted)")
        }
        None => (s, None, false),
    };
    let fd = if head == "AT_FDCWD" { None } else { Some(parse_int(head)?) };
    Some(FdArg { fd, path, deleted })
}

/// A quoted string argument, unescaped (`\76` is `>`, `\n`, `\"`, `\\`, `\xNN`). `None` if
/// the argument is not a quoted string.
pub fn unquote(s: &str) -> Option<String> {
    let s = trim(s);
    let s = s.strip_suffix("...").unwrap_or(s);
    let inner = s.strip_prefix('"')?.strip_suffix('"')?;
    Some(unescape(inner))
}

/// strace's escapes in a path: octal `\NNN`, `\xNN`, and the C letters.
pub fn unescape(s: &str) -> String {
    unescape_cow(s).into_owned()
}

/// [`unescape`], borrowing `s` when it has no escapes.
pub fn unescape_cow(s: &str) -> std::borrow::Cow<'_, str> {
    if memchr::memchr(b'\\', s.as_bytes()).is_none() {
        return std::borrow::Cow::Borrowed(s);
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' || i + 1 >= b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = b[i + 1];
        match c {
            b'0'..=b'7' => {
                let mut v: u32 = 0;
                let mut j = i + 1;
                while j < b.len() && j < i + 4 && (b'0'..=b'7').contains(&b[j]) {
                    v = v * 8 + u32::from(b[j] - b'0');
                    j += 1;
                }
                out.push((v & 0xff) as u8);
                i = j;
            }
            b'x' => {
                let h = s.get(i + 2..i + 4).and_then(|h| u8::from_str_radix(h, 16).ok());
                match h {
                    Some(v) => {
                        out.push(v);
                        i += 4;
                    }
                    None => {
                        out.push(b'x');
                        i += 2;
                    }
                }
            }
            _ => {
                out.push(match c {
                    b'n' => b'\n',
                    b't' => b'\t',
                    b'r' => b'\r',
                    b'v' => 0x0b,
                    b'f' => 0x0c,
                    other => other,
                });
                i += 2;
            }
        }
    }
    std::borrow::Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_timestamps() {
        let l = parse("9154  1795312728.229794 fsync(3</data/redo1.log> <unfinished ...>").unwrap();
        assert_eq!(l.pid, Some(9154));
        assert_eq!(l.time_ns, Some(1_795_312_728_229_794_000));
        assert_eq!(l.body, Body::Unfinished { name: "fsync", args: "3</data/redo1.log>" });
        let l = parse("[pid 13447] 10:45:01.500000 fsync(3) = 0 <0.003376>").unwrap();
        assert_eq!(l.pid, Some(13447));
        assert_eq!(l.time_ns, Some((10 * 3600 + 45 * 60 + 1) * 1_000_000_000 + 500_000_000));
        assert_eq!(l.dur_ns, Some(3_376_000));
        let l = parse("write(1, \"a) = b\", 6) = 6").unwrap();
        assert_eq!(l.body, Body::Call { name: "write", args: "1, \"a) = b\", 6", ret: "6" });
        let l = parse("9154  1795312728.233191 <... fsync resumed>) = 0 <0.003376>").unwrap();
        assert_eq!(l.body, Body::Resumed { name: "fsync", rest: "", ret: "0" });
        assert_eq!(parse("1795312721.182237 +++ exited with 0 +++").unwrap().body, Body::Exit);
        assert_eq!(parse("--- SIGCHLD {si_signo=SIGCHLD} ---").unwrap().body, Body::Signal);
    }

    #[test]
    fn first_args_agree_with_split_args() {
        for s in [
            "",
            " ",
            "3, [{iov_base=\"a,b\", iov_len=1}, {iov_base=\"\", iov_len=2}], 2",
            "AT_FDCWD</a>, \"x\\\",y\", O_RDONLY",
            "1, 2, 3, 4, 5, 6",
            "a), b, (c, d), e",
            "\"unterminated, x",
            "\"ends in a backslash\\",
            ", ,,",
            " \u{a0}x\u{85} , y\x0b",
            "{a, [b, (c]}, d",
            "a, b)), c, [d, e",
            "\"0123456789\\\"abc,def\\\\\", x, \"a long string without escapes, at all\", y",
            "\"0123456\\\",\", \"01234567\\\\\", \"012345678\"\", z",
            "\"01234567\\",
            "\"a\\\"\", \"b\", c, d, \"e",
        ] {
            let v = split_args(s);
            let a = first_args(s);
            for i in 0..ARGS {
                assert_eq!(a.get(i), v.get(i).copied().unwrap_or(""), "{s:?} argument {i}");
            }
            // Asked for in any order, the same.
            let a = first_args(s);
            for i in (0..ARGS).rev() {
                assert_eq!(a.get(i), v.get(i).copied().unwrap_or(""), "{s:?} argument {i}");
            }
        }
        assert_eq!(trim(" \u{a0}x\u{85}\x0b"), "x");
        assert_eq!(parse_int(" 0017 "), Some(0o17));
        assert_eq!(parse_int("+17"), Some(17));
        assert_eq!(parse_int("999999999999999999"), Some(999_999_999_999_999_999));
        assert_eq!(parse_int("99999999999999999999"), None);
        assert_eq!(parse_seconds("18446744073.709551615"), Some(u64::MAX));
        assert_eq!(parse_seconds("18446744074"), None);
        assert_eq!(parse_seconds("1.5"), Some(1_500_000_000));
    }

    #[test]
    fn bad_lines_are_errors() {
        for bad in [
            "",
            "garbage",
            "9154  1795312728.229794 write(3</x>, \"aaaa\"..., 32",
            "[pid 12 fsync(3) = 0",
            "12:99:00 fsync(3) = 0",
            "<... fsync",
            "(((",
            "x() = ",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn values_fds_and_paths() {
        let r = parse_ret("-1 ENOENT (No such file or directory)");
        assert_eq!((r.value, r.errno), (Some(-1), Some("ENOENT")));
        let r = parse_ret("3</data/tmp file\\76x>");
        assert_eq!((r.value, r.path), (Some(3), Some("/data/tmp file\\76x")));
        assert_eq!(parse_ret("?").value, None);
        assert_eq!(parse_int("0x10"), Some(16));
        assert_eq!(parse_int("0644"), Some(0o644));
        let f = parse_fd("3</data/tmp file\\76x>(deleted)").unwrap();
        assert_eq!((f.fd, f.path, f.deleted), (Some(3), Some("/data/tmp file\\76x"), true));
        assert_eq!(parse_fd("AT_FDCWD</cwd>").unwrap().fd, None);
        assert_eq!(unescape("/data/tmp file\\76x"), "/data/tmp file>x");
        assert_eq!(unquote("\"a\\\"b\"").as_deref(), Some("a\"b"));
        assert_eq!(
            split_args("3, [{iov_base=\"a,b\", iov_len=1}, {iov_base=\"\", iov_len=2}], 2"),
            vec!["3", "[{iov_base=\"a,b\", iov_len=1}, {iov_base=\"\", iov_len=2}]", "2"]
        );
    }
}
