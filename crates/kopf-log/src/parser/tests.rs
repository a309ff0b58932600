use super::*;

/// The buffer of an unterminated line never holds more than the bound, and
/// its allocation stays within twice the bound, however long the line.
#[test]
fn the_carry_buffer_is_bounded() {
    let mut p = Parser::default();
    let mut out: Vec<Record> = Vec::new();
    let chunk = vec![b'x'; 3000];
    for _ in 0..(10 << 20) / chunk.len() {
        p.push_chunk(&chunk, &mut out);
        assert!(p.carry.len() <= MAX_BUFFERED_LINE_BYTES);
        assert!(p.carry.capacity() <= 2 * MAX_BUFFERED_LINE_BYTES);
    }
    assert!(p.carry_dropped);
    p.push_chunk(b"\nnext\n", &mut out);
    assert!(p.carry.is_empty() && !p.carry_dropped);
    out.extend(p.finish());
    assert_eq!(out.len(), 2);
    assert!(out[0].truncated && !out[1].truncated);
    assert_eq!(out[1].message, "next");
}
