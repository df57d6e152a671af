//! Histograms as bytes: HDR's V2 format, which every HDR implementation reads. The store keeps
//! it uncompressed; JSON export (`--histograms`) carries it as V2 deflate in base64, the
//! "compressed histogram" HdrHistogram's Java, C, Go and Python libraries decode, so other tools
//! can merge or re-percentile iolab's latencies. Decoding checks lengths before it allocates,
//! because a blob or a JSON file may be damaged or made up.

use base64::Engine as _;
use flate2::read::ZlibDecoder;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::io::Read;

/// The first four bytes of V2 (uncompressed) bytes, as HdrHistogram writes them.
pub const V2_COOKIE: u32 = 0x1c84_9313;
/// The first four bytes of V2 deflate bytes: HdrHistogram's compressed-histogram cookie
/// (`0x1c849304`) with the word-size nibble its encoders set.
pub const V2_DEFLATE_COOKIE: u32 = 0x1c84_9314;
/// The compressed-histogram cookie with the nibble masked, as HdrHistogram's decoders compare it.
pub const V2_DEFLATE_COOKIE_BASE: u32 = 0x1c84_9304;
/// `encoding` of an exported histogram.
pub const ENCODING: &str = "hdr-v2-deflate-base64";
/// `unit` of an exported histogram's values.
pub const UNIT: &str = "ns";

/// V2's header: cookie, payload length, normalizing offset, significant digits, lowest and
/// highest trackable values, integer-to-double ratio.
const V2_HEADER: usize = 40;
/// The largest V2 payload decoded. iolab's histograms (1 ns to 1 h, 3 significant digits)
/// encode in a few KiB; the widest HDR histogram a counter array can hold stays far below.
const MAX_PAYLOAD: usize = 64 << 20;

/// V2 (uncompressed) bytes of a non-empty histogram, as the store keeps them.
pub fn to_v2(h: &Histogram<u64>) -> Option<Vec<u8>> {
    if h.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    V2Serializer::new().serialize(h, &mut out).ok()?;
    Some(out)
}

/// V2 deflate bytes of a non-empty histogram, the form export carries.
pub fn to_v2_deflate(h: &Histogram<u64>) -> Option<Vec<u8>> {
    if h.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut out).ok()?;
    Some(out)
}

/// Why bytes or an exported histogram did not decode.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("unknown histogram encoding `{0}`; iolab writes `{ENCODING}`")]
    Encoding(String),
    #[error("unknown histogram unit `{0}`; iolab writes `{UNIT}`")]
    Unit(String),
    #[error("histogram data is not base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("not an HDR V2 histogram: {0}")]
    Format(String),
    #[error("the histogram holds {found} values but its count says {said}")]
    Count { said: u64, found: u64 },
    #[error("not an HDR V2 histogram: its compressed payload does not inflate: {0}")]
    Inflate(#[source] std::io::Error),
    #[error("not an HDR V2 histogram: {0}")]
    Hdr(#[from] hdrhistogram::serialization::DeserializeError),
}

fn format(what: impl Into<String>) -> DecodeError {
    DecodeError::Format(what.into())
}

fn be_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Check V2 bytes' header against their length, so the decoder never sizes a buffer from a
/// length the bytes do not back.
fn check_v2(b: &[u8]) -> Result<(), DecodeError> {
    let len = be_u32(b, 4).ok_or_else(|| format("shorter than its header"))? as usize;
    if b.len() < V2_HEADER {
        return Err(format("shorter than its header"));
    }
    if len > b.len() - V2_HEADER {
        return Err(format(format!("its payload says {len} bytes but {} follow", b.len() - V2_HEADER)));
    }
    check_counts(&b[V2_HEADER..V2_HEADER + len])
}

/// Walk V2's counts (zig-zag LEB128 of at most 9 bytes, the ninth carrying 8 bits; negative
/// numbers are runs of empty buckets) and refuse what hdrhistogram 7.6's decoder cannot take:
/// the number `u64::MAX` zig-zags to `i64::MIN`, a run it negates with an overflow (a panic
/// wherever overflow checks are on, as in debug builds).
fn check_counts(mut p: &[u8]) -> Result<(), DecodeError> {
    while !p.is_empty() {
        let (mut v, mut n) = (0u64, 0usize);
        loop {
            let b = *p.get(n).ok_or_else(|| format("its last count is cut off"))?;
            if n == 8 {
                v |= u64::from(b) << 56;
                n += 1;
                break;
            }
            v |= u64::from(b & 0x7f) << (7 * n);
            n += 1;
            if b & 0x80 == 0 {
                break;
            }
        }
        if v == u64::MAX {
            return Err(format("a run of empty buckets longer than any histogram"));
        }
        p = &p[n..];
    }
    Ok(())
}

/// Read V2 or V2 deflate bytes back. The histogram auto-resizes so it can be merged into.
pub fn decode(b: &[u8]) -> Result<Histogram<u64>, DecodeError> {
    let inflated;
    let v2 = match be_u32(b, 0) {
        Some(V2_COOKIE) => b,
        Some(V2_DEFLATE_COOKIE) => {
            let len = be_u32(b, 4).ok_or_else(|| format("shorter than its header"))? as usize;
            let body = b.get(8..).unwrap_or_default();
            if len > body.len() {
                return Err(format(format!("its compressed payload says {len} bytes but {} follow", body.len())));
            }
            let mut out = Vec::new();
            ZlibDecoder::new(&body[..len])
                .take((V2_HEADER + MAX_PAYLOAD + 1) as u64)
                .read_to_end(&mut out)
                .map_err(DecodeError::Inflate)?;
            if out.len() > V2_HEADER + MAX_PAYLOAD {
                return Err(format(format!("it inflates beyond {} MiB", MAX_PAYLOAD >> 20)));
            }
            if be_u32(&out, 0) != Some(V2_COOKIE) {
                return Err(format("its compressed payload is not V2"));
            }
            inflated = out;
            &inflated
        }
        _ => return Err(format("unknown cookie (not V2 or V2 deflate)")),
    };
    check_v2(v2)?;
    let mut h: Histogram<u64> = Deserializer::new().deserialize(&mut &v2[..])?;
    h.auto(true);
    Ok(h)
}

/// Read V2 (or V2 deflate) bytes back, `None` if they do not decode.
pub fn from_bytes(b: &[u8]) -> Option<Histogram<u64>> {
    decode(b).ok()
}

/// A histogram as JSON export carries it (docs/json.md): V2 deflate bytes in standard base64,
/// values in ns, and the count of values it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exported {
    pub encoding: String,
    pub unit: String,
    pub count: u64,
    pub data: String,
}

impl Exported {
    /// The export of a non-empty histogram.
    pub fn of(h: &Histogram<u64>) -> Option<Exported> {
        let bytes = to_v2_deflate(h)?;
        Some(Exported {
            encoding: ENCODING.into(),
            unit: UNIT.into(),
            count: h.len(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        })
    }

    /// The histogram back, checked against its encoding, unit and count.
    pub fn decode(&self) -> Result<Histogram<u64>, DecodeError> {
        if self.encoding != ENCODING {
            return Err(DecodeError::Encoding(self.encoding.clone()));
        }
        if self.unit != UNIT {
            return Err(DecodeError::Unit(self.unit.clone()));
        }
        let h = decode(&base64::engine::general_purpose::STANDARD.decode(&self.data)?)?;
        if h.len() != self.count {
            return Err(DecodeError::Count { said: self.count, found: h.len() });
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Histogram<u64> {
        let mut h = crate::new_histogram();
        for v in [1_000u64, 20_000, 3_000_000] {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn both_forms_round_trip() {
        let h = sample();
        for b in [to_v2(&h).unwrap(), to_v2_deflate(&h).unwrap()] {
            let back = from_bytes(&b).unwrap();
            assert_eq!(back.len(), 3);
            assert_eq!(back.max(), h.max());
            assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
        }
        assert!(from_bytes(b"garbage").is_none());
        assert!(to_v2(&crate::new_histogram()).is_none());
        assert!(Exported::of(&crate::new_histogram()).is_none());
    }

    #[test]
    fn export_is_hdrhistograms_compressed_form() {
        let e = Exported::of(&sample()).unwrap();
        assert_eq!((e.encoding.as_str(), e.unit.as_str(), e.count), (ENCODING, UNIT, 3));
        // HdrHistogram's log files start every compressed histogram with these characters.
        assert!(e.data.starts_with("HISTFAAA"), "{}", e.data);
        let bytes = base64::engine::general_purpose::STANDARD.decode(&e.data).unwrap();
        let cookie = be_u32(&bytes, 0).unwrap();
        assert_eq!(cookie, V2_DEFLATE_COOKIE);
        assert_eq!(cookie & !0xf0, V2_DEFLATE_COOKIE_BASE);
        // Zlib's header follows the cookie and the compressed length.
        assert_eq!(be_u32(&bytes, 4).unwrap() as usize, bytes.len() - 8);
        assert_eq!(bytes[8], 0x78);
        assert_eq!(e.decode().unwrap().value_at_quantile(0.99), sample().value_at_quantile(0.99));
    }

    #[test]
    fn damaged_exports_are_refused_with_the_reason() {
        let good = Exported::of(&sample()).unwrap();
        let with = |f: fn(&mut Exported)| {
            let mut e = good.clone();
            f(&mut e);
            e.decode().unwrap_err().to_string()
        };
        assert!(with(|e| e.encoding = "hdr-v1".into()).contains("unknown histogram encoding `hdr-v1`"));
        assert!(with(|e| e.unit = "us".into()).contains("unit `us`"));
        assert!(with(|e| e.data.insert(3, '!')).contains("not base64"));
        assert!(with(|e| e.count = 4).contains("holds 3 values but its count says 4"));
        assert!(with(|e| e.data = "AAAA".into()).contains("unknown cookie"));
    }

    #[test]
    fn lengths_are_checked_before_anything_is_allocated() {
        // A header that claims a 4 GiB payload, without the bytes.
        let mut v2 = to_v2(&sample()).unwrap();
        v2[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode(&v2).unwrap_err().to_string().contains("payload says 4294967295 bytes"));
        let mut z = to_v2_deflate(&sample()).unwrap();
        z[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode(&z).unwrap_err().to_string().contains("compressed payload says"));
        // The same inside a compressed payload.
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut e, &v2).unwrap();
        let inner = e.finish().unwrap();
        let mut z = V2_DEFLATE_COOKIE.to_be_bytes().to_vec();
        z.extend((inner.len() as u32).to_be_bytes());
        z.extend(inner);
        assert!(decode(&z).unwrap_err().to_string().contains("payload says 4294967295 bytes"));
        // A count of nine 0xff bytes zig-zags to i64::MIN, which hdrhistogram's decoder negates.
        let mut v2 = to_v2(&sample()).unwrap();
        let len = be_u32(&v2, 4).unwrap() + 9;
        v2[4..8].copy_from_slice(&len.to_be_bytes());
        v2.extend([0xff; 9]);
        assert!(decode(&v2).unwrap_err().to_string().contains("a run of empty buckets"));
        v2.truncate(v2.len() - 1);
        assert!(decode(&v2).is_err());
        // Truncations of good bytes never decode to something else silently.
        let good = to_v2_deflate(&sample()).unwrap();
        for n in 0..good.len() {
            assert!(decode(&good[..n]).is_err(), "{n} bytes decoded");
        }
    }
}
