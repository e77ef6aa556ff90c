use super::*;

#[test]
fn consecutive_string_ids_are_not_listed_and_resolve_as_listed_ones() {
    let rows = |ids: &[i64]| -> Vec<(i64, String)> {
        ids.iter().map(|&id| (id, format!("s{id}"))).collect()
    };
    let consecutive = Strings::from_rows(rows(&[1, 2, 3, 4]));
    assert_eq!(
        consecutive.row_ids(),
        &RowIds::Consecutive { first: 1, rows: 4 }
    );
    // A break in the run lists every id, those before it included.
    let broken = Strings::from_rows(rows(&[1, 2, 3, 7, 8, -1]));
    assert_eq!(broken.row_ids(), &RowIds::Listed(vec![1, 2, 3, 7, 8, -1]));
    for s in [&consecutive, &broken] {
        for (name, id) in s.row_ids().iter().enumerate() {
            assert_eq!(s.resolve(id), name as NameId, "id {id}");
            assert_eq!(s.get(s.resolve(id)), format!("s{id}"));
            assert_eq!(s.sqlite_id(name as NameId), Some(id));
        }
        let index = StringIndex::new(s.row_ids());
        for id in [-2, 0, 5, 6, 9, i64::MIN, i64::MAX] {
            assert_eq!(
                (s.resolve(id), index.resolve(id)),
                (NO_NAME, NO_NAME),
                "id {id}"
            );
        }
    }
    let mut interned = consecutive.clone();
    let text = interned.intern("inline");
    assert_eq!((text, interned.sqlite_id(text)), (4, None));
    assert_eq!(
        interned.sqlite_ids_where(|v| v.starts_with('s')),
        [1, 2, 3, 4]
    );
}

#[test]
fn strings_read_back_across_chunk_boundaries() {
    // Values of every length up to past a chunk, so some end exactly at a chunk's end,
    // some do not fit the rest of one, and one is longer than a chunk.
    let values: Vec<String> = (0..600usize)
        .map(|i| {
            let len = (i * 7919) % 4000 + if i == 300 { STRING_CHUNK + 5 } else { 0 };
            let c = char::from(b'a' + (i % 26) as u8);
            c.to_string().repeat(len)
        })
        .chain(["é".repeat(3000), String::new()])
        .collect();
    let rows = values.iter().enumerate();
    let s = Strings::from_rows(rows.map(|(i, v)| (i as i64, v.clone())).collect());
    assert!(
        s.chunks.len() > 2,
        "spans several chunks: {}",
        s.chunks.len()
    );
    for (id, v) in values.iter().enumerate() {
        assert_eq!(s.get(id as NameId), v, "value {id}");
    }
    let mut interned = s.clone();
    let long = "z".repeat(STRING_CHUNK * 2);
    let id = interned.intern(&long);
    assert_eq!(interned.intern(&long), id);
    assert_eq!(interned.get(id), long);
    assert_eq!(interned.get(id - 1), "");
}

#[test]
fn strings_keep_rows_and_interned_texts_apart_and_intern_each_text_once() {
    let mut s = Strings::from_rows(vec![
        (7, "gemm".into()),
        (3, String::new()),
        (9, "é x".into()),
    ]);
    assert_eq!((s.get(0), s.get(1), s.get(2)), ("gemm", "", "é x"));
    assert_eq!(
        (s.resolve(7), s.resolve(3), s.resolve(9), s.resolve(8)),
        (0, 1, 2, NO_NAME)
    );
    let step = s.intern("[Executor] _forward_step 1: 0 ctx reqs, 8 gen reqs");
    let other = s.intern("_prepare_tp_inputs");
    // A row's value is not an interned text: interning it adds a copy with no StringIds.id.
    let gemm = s.intern("gemm");
    assert_eq!((step, other, gemm), (3, 4, 5));
    assert_eq!(s.intern("_prepare_tp_inputs"), other);
    assert_eq!(
        s.intern("[Executor] _forward_step 1: 0 ctx reqs, 8 gen reqs"),
        step
    );
    assert_eq!(
        s.get(step),
        "[Executor] _forward_step 1: 0 ctx reqs, 8 gen reqs"
    );
    assert_eq!((s.sqlite_id(0), s.sqlite_id(step)), (Some(7), None));
    assert_eq!((s.len(), s.get(NO_NAME), s.get(6)), (6, "", ""));
    let flags = s.classify(|v| v.contains('_'));
    let read: Vec<bool> = (0..8).map(|id| flags.get(id)).collect();
    assert_eq!(read, [false, false, false, true, true, false, false, false]);
    assert!(!flags.get(NO_NAME));
}

#[test]
fn name_flags_read_back_across_words() {
    let want: Vec<bool> = (0..200u32).map(|i| i % 3 == 0 || i == 127).collect();
    let flags: NameFlags = want.iter().copied().collect();
    assert_eq!(flags.len(), 200);
    let read: Vec<bool> = (0..260).map(|id| flags.get(id)).collect();
    assert_eq!(&read[..200], &want[..]);
    assert!(read[200..].iter().all(|&f| !f), "past the end: none");
    assert!(!flags.get(NO_NAME));
}
