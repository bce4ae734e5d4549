//! SQLite's variable-length integers (fileformat2.html, "B-tree Pages"): 1 to 9 bytes, big
//! endian, 7 bits per byte with the high bit set on all but the last, the ninth byte whole.

/// The varint at the start of `bytes` and its length in bytes; `None` when `bytes` ends first.
pub(crate) fn read(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value: u64 = 0;
    for i in 0..8 {
        let b = *bytes.get(i)?;
        value = (value << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    let b = *bytes.get(8)?;
    Some(((value << 8) | u64::from(b), 9))
}

#[cfg(test)]
mod tests {
    use super::read;

    #[test]
    fn varints_as_the_file_format_writes_them() {
        type Case = (&'static [u8], Option<(u64, usize)>);
        let cases: &[Case] = &[
            (&[0x00], Some((0, 1))),
            (&[0x7f], Some((127, 1))),
            (&[0x81, 0x00], Some((128, 2))),
            (&[0x82, 0x2c], Some((300, 2))),
            (&[0xff; 9], Some((u64::MAX, 9))),
            (&[0x81], None),
            (&[], None),
            (&[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80], None),
        ];
        for (bytes, want) in cases {
            assert_eq!(read(bytes), *want, "{bytes:02x?}");
        }
    }
}
