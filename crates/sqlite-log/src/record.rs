//! The record format (fileformat2.html, "Record Format"): a header of serial types, then the
//! values. Values are hashed (xxh3 with the caller's seed) in a form that does not depend on
//! how SQLite chose to store them, never kept.

use xxhash_rust::xxh3::Xxh3;

/// One value of a record, borrowed from the payload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value<'a> {
    Null,
    Int(i64),
    Real(f64),
    /// Text in the database's encoding.
    Text(&'a [u8]),
    Blob(&'a [u8]),
}

/// The values of the record `payload`; `None` when it is not a record (truncated header or
/// body, a reserved serial type).
pub(crate) fn values(payload: &[u8]) -> Option<Vec<Value<'_>>> {
    let (header_size, mut at) = crate::varint::read(payload)?;
    let header_size = usize::try_from(header_size).ok()?;
    let header = payload.get(..header_size)?;
    let mut body = header_size;
    let mut out = Vec::new();
    while at < header_size {
        let (serial, n) = crate::varint::read(header.get(at..)?)?;
        at += n;
        let (value, len) = value(serial, payload.get(body..)?)?;
        body += len;
        out.push(value);
    }
    (at == header_size).then_some(out)
}

/// The value of serial type `serial` at the start of `body`, and its length.
fn value(serial: u64, body: &[u8]) -> Option<(Value<'_>, usize)> {
    let int = |n: usize| {
        let bytes = body.get(..n)?;
        let mut v: i64 = if bytes.first()? & 0x80 != 0 { -1 } else { 0 };
        for b in bytes {
            v = (v << 8) | i64::from(*b);
        }
        Some((Value::Int(v), n))
    };
    match serial {
        0 => Some((Value::Null, 0)),
        1..=4 => int(serial as usize),
        5 => int(6),
        6 => int(8),
        7 => {
            let b = body.get(..8)?;
            let bits = u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
            Some((Value::Real(f64::from_bits(bits)), 8))
        }
        8 => Some((Value::Int(0), 0)),
        9 => Some((Value::Int(1), 0)),
        10 | 11 => None,
        n => {
            let len = usize::try_from((n - 12) / 2).ok()?;
            let bytes = body.get(..len)?;
            Some((
                if n % 2 == 0 {
                    Value::Blob(bytes)
                } else {
                    Value::Text(bytes)
                },
                len,
            ))
        }
    }
}

/// A column's type affinity (datatype3.html, "Determination Of Column Affinity"), from its
/// declared type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Affinity {
    Integer,
    Text,
    Blob,
    Real,
    Numeric,
}

impl Affinity {
    /// The affinity of declared type `declared` (SQLite's rules, in their order).
    pub(crate) fn of(declared: &str) -> Affinity {
        let t = declared.to_ascii_uppercase();
        if t.contains("INT") {
            Affinity::Integer
        } else if t.contains("CHAR") || t.contains("CLOB") || t.contains("TEXT") {
            Affinity::Text
        } else if t.contains("BLOB") || t.trim().is_empty() {
            Affinity::Blob
        } else if t.contains("REAL") || t.contains("FLOA") || t.contains("DOUB") {
            Affinity::Real
        } else {
            Affinity::Numeric
        }
    }
}

/// The hash of `value` in a column of affinity `affinity`: a REAL column's integral values,
/// which SQLite may store as integers, hash as the reals they read as.
pub(crate) fn hash(seed: u64, affinity: Affinity, value: &Value<'_>) -> u64 {
    let mut h = Xxh3::with_seed(seed);
    match *value {
        Value::Null => h.update(&[0]),
        Value::Int(i) if affinity == Affinity::Real => real(&mut h, i as f64),
        Value::Int(i) => {
            h.update(&[1]);
            h.update(&i.to_le_bytes());
        }
        Value::Real(r) => real(&mut h, r),
        Value::Text(t) => {
            h.update(&[3]);
            h.update(t);
        }
        Value::Blob(b) => {
            h.update(&[4]);
            h.update(b);
        }
    }
    h.digest()
}

fn real(h: &mut Xxh3, r: f64) {
    h.update(&[2]);
    h.update(&r.to_bits().to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_types_decode_as_the_file_format_says() {
        // Header 9 bytes: size, then NULL, int8, int16, int24, 0, 1, text(2), blob(1).
        let payload = [
            9u8, 0, 1, 2, 3, 8, 9, 17, 14, //
            0xff, 0x01, 0x00, 0x80, 0x00, 0x00, b'h', b'i', 0xab,
        ];
        let mut p = payload.to_vec();
        let v = values(&p).expect("a record");
        assert_eq!(
            v,
            vec![
                Value::Null,
                Value::Int(-1),
                Value::Int(256),
                Value::Int(-8_388_608),
                Value::Int(0),
                Value::Int(1),
                Value::Text(b"hi"),
                Value::Blob(&[0xab]),
            ]
        );
        assert_eq!(values(&p[..p.len() - 1]), None, "body truncated");
        p[1] = 10;
        assert_eq!(values(&p), None, "reserved serial type");
        assert_eq!(values(&[200]), None, "header longer than the payload");
    }

    #[test]
    fn affinities_follow_sqlites_rules() {
        let cases = [
            ("INTEGER", Affinity::Integer),
            ("UNSIGNED BIG INT", Affinity::Integer),
            ("VARYING CHARACTER(255)", Affinity::Text),
            ("CLOB", Affinity::Text),
            ("", Affinity::Blob),
            ("DOUBLE PRECISION", Affinity::Real),
            ("FLOATING POINT", Affinity::Integer),
            ("DECIMAL(10,5)", Affinity::Numeric),
            ("DATETIME", Affinity::Numeric),
        ];
        for (t, want) in cases {
            assert_eq!(Affinity::of(t), want, "{t}");
        }
    }

    #[test]
    fn a_real_columns_integral_value_hashes_as_the_real() {
        let h = |a, v| hash(7, a, &v);
        assert_eq!(
            h(Affinity::Real, Value::Int(3)),
            h(Affinity::Real, Value::Real(3.0))
        );
        assert_ne!(
            h(Affinity::Numeric, Value::Int(3)),
            h(Affinity::Numeric, Value::Real(3.0))
        );
        assert_ne!(
            h(Affinity::Blob, Value::Text(b"1")),
            h(Affinity::Blob, Value::Blob(b"1"))
        );
    }
}
