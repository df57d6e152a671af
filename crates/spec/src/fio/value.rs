//! fio's spellings of values, read as fio 3.x reads them but stricter: sizes under `kb_base`
//! (by default `4k` and `4kb` are 4096 while `4kib` is 4000, fio's compatibility mode), times
//! in seconds unless a suffix says otherwise, booleans, block size ranges and splits. What fio
//! would silently misread (`1.5k` as 1, `4q` as 4, `10sec` as 10 µs) is refused with the reason.

use std::time::Duration;

/// How fio reads the `k`, `m`, `g`... prefixes (`kb_base`): 1024, its default, or 1000.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KbBase(pub u64);

impl Default for KbBase {
    fn default() -> Self {
        KbBase(1024)
    }
}

/// A size in bytes: `4096`, `4k`, `1m`, `0x1000`, `1g`, `512b`.
pub fn size(text: &str, kb: KbBase) -> Result<u64, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty size".into());
    }
    if s.starts_with('(') {
        return Err(format!("`{s}`: arithmetic expressions are not read; write the value"));
    }
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).map_err(|_| format!("`{s}` is not a hexadecimal number"));
    }
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    if num.is_empty() {
        return Err(format!("`{s}` is not a size: it must start with a number (4k, 1m, 2g)"));
    }
    if suffix.starts_with('.') {
        let whole = num;
        return Err(format!("`{s}`: fio reads no fractions (it would read this as {whole}); write a whole number, in a smaller unit if need be"));
    }
    if suffix == "%" {
        return Err(format!(
            "`{s}`: a percentage is taken by size, io_size, offset and offset_increment (of the file's size), not here; give a size"
        ));
    }
    if suffix == "z" {
        // parse.c: only FIO_OPT_STR_VAL_ZONE options take `z`; the others fail to parse.
        return Err(format!(
            "`{s}`: zone units are taken by size, io_size, offset, offset_increment and zoneskip only (fio 3.33: \"'z' suffix isn't applicable\")"
        ));
    }
    let n: u64 = num.parse().map_err(|_| format!("`{s}` is too large"))?;
    let mult = size_multiplier(suffix, kb).ok_or_else(|| {
        format!(
            "`{s}`: unknown unit `{suffix}` (fio would ignore it and read {n} bytes); accepted: k, m, g, t, p (× {}), kib, mib, gib, tib, pib (× {}), b",
            kb.0,
            if kb.0 == 1024 { 1000 } else { 1024 }
        )
    })?;
    n.checked_mul(mult).ok_or_else(|| format!("`{s}` is too large"))
}

/// A size as `size`, `io_size` and `offset` take it: bytes, a percentage of the file's size
/// (`50%`, 0 to 100), or a number of zones (`8z`, which fio converts to bytes under
/// `zonemode=zbd` only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    Bytes(u64),
    Percent(u8),
    Zones(u64),
}

/// A [`Region`]: `%` and `z` as fio's parser takes them (a whole number before either; fio
/// keeps percentages from 0 to 100), anything else a [`size`].
pub fn region(text: &str, kb: KbBase) -> Result<Region, String> {
    let s = text.trim();
    let pct = s.strip_suffix('%');
    // parse.c looks for a lowercase `z` only (`8Z` is an unknown unit).
    let zones = s.strip_suffix('z');
    match (pct, zones) {
        (Some(n), _) => match n.trim().parse::<u8>() {
            Ok(p) if p <= 100 => Ok(Region::Percent(p)),
            _ => Err(format!("`{s}`: a percentage is a whole number from 0 to 100 followed by %")),
        },
        (None, Some(n)) if !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()) => {
            n.parse().map(Region::Zones).map_err(|_| format!("`{s}` is too large"))
        }
        _ => size(s, kb).map(Region::Bytes),
    }
}

/// fio's `__get_mult_bytes`: case-insensitive; `k`/`kb` use kb_base, `kib` the other base.
fn size_multiplier(suffix: &str, kb: KbBase) -> Option<u64> {
    let s = suffix.to_ascii_lowercase();
    let other = if kb.0 == 1000 { 1024 } else { 1000 };
    let (pow, base) = match s.as_str() {
        "" | "b" => return Some(1),
        "k" | "kb" | "ki" => (1, kb.0),
        "m" | "mb" | "mi" => (2, kb.0),
        "g" | "gb" | "gi" => (3, kb.0),
        "t" | "tb" | "ti" => (4, kb.0),
        "p" | "pb" | "pi" => (5, kb.0),
        "kib" => (1, other),
        "mib" => (2, other),
        "gib" => (3, other),
        "tib" => (4, other),
        "pib" => (5, other),
        _ => return None,
    };
    base.checked_pow(pow)
}

/// A time: seconds without a suffix, or `us`/`usec`, `ms`/`msec`, `s`, `m`, `h`, `d`.
pub fn time(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty time".into());
    }
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    if num.is_empty() {
        return Err(format!("`{s}` is not a time: it must start with a number (30, 30s, 500ms, 2m)"));
    }
    let n: u64 = num.parse().map_err(|_| format!("`{s}` is too large"))?;
    let us_per: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" | "s" => 1_000_000,
        "us" | "usec" => 1,
        "ms" | "msec" => 1_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        "sec" => return Err(format!("`{s}`: fio reads `sec` as microseconds (its parser knows `s`); write {n}s")),
        other => return Err(format!("`{s}`: unknown time unit `{other}`; accepted: us, ms, s (the default), m, h, d")),
    };
    let us = n.checked_mul(us_per).ok_or_else(|| format!("`{s}` is too long"))?;
    Ok(Duration::from_micros(us))
}

/// A whole number without units (`iodepth`, `numjobs`, `fsync`...).
pub fn int(text: &str) -> Result<u64, String> {
    let s = text.trim();
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).map_err(|_| format!("`{s}` is not a hexadecimal number"));
    }
    s.parse().map_err(|_| format!("`{s}` is not a whole number"))
}

/// A boolean: `1`/`0` (fio also takes `true`/`false` nowhere; we accept them for clarity).
pub fn boolean(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        other => Err(format!("`{other}` is not a boolean; write 1 or 0")),
    }
}

/// A per-direction list (`bs=8k,32k`): the value for reads, writes and trims, where a value
/// not followed by a comma applies to the directions after it and an empty one means the
/// default (`None`).
pub fn per_direction(text: &str) -> [Option<String>; 3] {
    let parts: Vec<&str> = text.split(',').collect();
    let mut out: [Option<String>; 3] = [None, None, None];
    for (i, slot) in out.iter_mut().enumerate() {
        let v = match parts.get(i) {
            Some(p) => Some(p.trim()),
            // Missing: the last value given applies on, unless the list ended in a comma.
            None if parts.len() == 1 => Some(parts[0].trim()),
            None if parts.len() == 2 && i == 2 => Some(parts[1].trim()),
            None => None,
        };
        *slot = v.filter(|v| !v.is_empty()).map(str::to_string);
    }
    out
}

/// A block size range `4k-16k` or `4k:16k` as (low, high), swapped when given high first.
pub fn range(text: &str, kb: KbBase) -> Result<(u64, u64), String> {
    let s = text.trim();
    let (a, b) = s
        .split_once('-')
        .or_else(|| s.split_once(':'))
        .ok_or_else(|| format!("`{s}` is not a range; write LOW-HIGH, for example 4k-16k"))?;
    let (a, b) = (size(a, kb)?, size(b, kb)?);
    Ok((a.min(b), a.max(b)))
}

/// `bssplit`'s `4k/10:64k/50:32k/40`: sizes with percentages; blank percentages share what is
/// left evenly, as fio fills them in. The percentages must not add up to more than 100.
pub fn split(text: &str, kb: KbBase) -> Result<Vec<(u64, u32)>, String> {
    let mut given: Vec<(u64, Option<u32>)> = Vec::new();
    for part in text.split(':').map(str::trim).filter(|p| !p.is_empty()) {
        let (bs, pct) = match part.split_once('/') {
            Some((b, p)) => (b, p.trim()),
            None => (part, ""),
        };
        let bs = size(bs, kb)?;
        if bs == 0 {
            return Err(format!("`{part}`: a block size must be above 0"));
        }
        let pct = if pct.is_empty() {
            None
        } else {
            let p: u32 =
                pct.parse().map_err(|_| format!("`{part}`: the percentage after `/` must be a whole number"))?;
            Some(p)
        };
        given.push((bs, pct));
    }
    if given.is_empty() {
        return Err("no block size given; write for example 4k/50:64k/50".into());
    }
    let set: u32 = given.iter().filter_map(|g| g.1).sum();
    if set > 100 {
        return Err(format!("the percentages add up to {set}, more than 100"));
    }
    let blanks = given.iter().filter(|g| g.1.is_none()).count() as u32;
    let share = (100 - set).checked_div(blanks).unwrap_or(0);
    let out: Vec<(u64, u32)> = given.into_iter().map(|(b, p)| (b, p.unwrap_or(share))).filter(|g| g.1 > 0).collect();
    if out.is_empty() {
        return Err("every block size has a share of 0".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: KbBase = KbBase(1024);

    #[test]
    fn sizes_as_fio_reads_them() {
        // Checked against fio 3.33 (`--ioengine=null --size=V --bs=1`, its io_bytes).
        for (v, want) in [
            ("1mi", 1 << 20),
            ("1mib", 1_000_000),
            ("4k", 4096),
            ("4kib", 4000),
            ("4KiB", 4000),
            ("4K", 4096),
            ("4kb", 4096),
            ("512b", 512),
            ("0x10", 16),
            ("2ki", 2048),
            ("1g", 1 << 30),
        ] {
            assert_eq!(size(v, K), Ok(want), "{v}");
        }
        assert_eq!(size("4k", KbBase(1000)), Ok(4000));
        assert_eq!(size("4kib", KbBase(1000)), Ok(4096));
    }

    #[test]
    fn what_fio_misreads_is_refused() {
        assert!(size("1.5k", K).unwrap_err().contains("read this as 1"));
        assert!(size("4q", K).unwrap_err().contains("unknown unit `q`"));
        assert!(size("10%", K).unwrap_err().contains("percentage"));
        assert!(size("k", K).is_err());
        assert!(size("99999999999999999999", K).is_err());
        assert!(size("99999999999p", K).unwrap_err().contains("too large"));
        assert!(size("(1+2)", K).unwrap_err().contains("arithmetic"));
    }

    #[test]
    fn regions_take_percentages_and_zones() {
        assert_eq!(region("50%", K), Ok(Region::Percent(50)));
        assert_eq!(region("0%", K), Ok(Region::Percent(0)));
        assert_eq!(region("100%", K), Ok(Region::Percent(100)));
        assert_eq!(region("8z", K), Ok(Region::Zones(8)));
        assert_eq!(region("1m", K), Ok(Region::Bytes(1 << 20)));
        assert!(region("101%", K).unwrap_err().contains("0 to 100"));
        assert!(region("x%", K).is_err());
        // Elsewhere (bs=8z), fio 3.33 refuses: "bs: 'z' suffix isn't applicable".
        assert!(size("8z", K).unwrap_err().contains("isn't applicable"));
    }

    #[test]
    fn times() {
        assert_eq!(time("10"), Ok(Duration::from_secs(10)));
        assert_eq!(time("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(time("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(time("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(time("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(time("250usec"), Ok(Duration::from_micros(250)));
        assert_eq!(time("1d"), Ok(Duration::from_secs(86400)));
        // fio 3.33 ran `--runtime=1sec` for 0 ms.
        assert!(time("1sec").unwrap_err().contains("microseconds"));
        assert!(time("5y").unwrap_err().contains("unknown time unit"));
        assert!(time("").is_err());
    }

    #[test]
    fn per_direction_lists_follow_the_howto() {
        let p = |s: &str| per_direction(s).map(|o| o.unwrap_or_default());
        assert_eq!(p("256k"), ["256k", "256k", "256k"]);
        assert_eq!(p("8k,32k"), ["8k", "32k", "32k"]);
        assert_eq!(p("8k,32k,"), ["8k", "32k", ""]);
        assert_eq!(p(",8k"), ["", "8k", "8k"]);
        assert_eq!(p(",8k,"), ["", "8k", ""]);
    }

    #[test]
    fn ranges_and_splits() {
        assert_eq!(range("4k-16k", K), Ok((4096, 16384)));
        assert_eq!(range("16k:4k", K), Ok((4096, 16384)));
        assert!(range("4k", K).is_err());
        assert_eq!(split("4k/10:64k/50:32k/40", K), Ok(vec![(4096, 10), (65536, 50), (32768, 40)]));
        assert_eq!(split("4k/50:1k/:32k/", K), Ok(vec![(4096, 50), (1024, 25), (32768, 25)]));
        assert!(split("4k/60:8k/60", K).unwrap_err().contains("120"));
        assert!(split("4k/x", K).is_err());
        assert!(split("", K).is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_a_value_or_an_error(s in "\\PC{0,24}") {
            let _ = size(&s, K);
            let _ = time(&s);
            let _ = range(&s, K);
            let _ = split(&s, K);
            let _ = per_direction(&s);
        }
    }
}
