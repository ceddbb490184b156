//! The trace's own cases: elided repetitions expand to what was recorded; a held trace keeps order.

use super::*;

fn gate(detail: &str) -> Entry {
    Entry::Gate {
        gate: Gate::EVERY[0],
        passed: true,
        detail: detail.to_string().into(),
    }
}

#[test]
fn an_elided_trace_expands_to_what_was_recorded_in_order() {
    // Recorded: a b | a b | a b | c | a b, with the second, third and fifth repetition elided.
    let trace = Trace::new();
    let mut elided = Elided::default();
    for (repetition, details) in [["a", "b"], ["a", "b"], ["a", "b"], ["c", ""], ["a", "b"]]
        .iter()
        .enumerate()
    {
        let start = trace.len();
        for detail in details.iter().filter(|d| !d.is_empty()) {
            trace.push(gate(detail));
        }
        if repetition > 0 && trace.elide_repeat(0..2, start) {
            elided.push(start);
        }
    }
    elided.first = 0..2;
    let kept = trace.entries();
    assert_eq!(
        kept,
        [gate("a"), gate("b"), gate("c")],
        "the differing one is kept"
    );
    assert_eq!(elided.repetitions(), 3);
    let whole: Vec<&Entry> = expanded(&kept, &elided).collect();
    let details: Vec<String> = whole
        .iter()
        .map(|e| match e {
            Entry::Gate { detail, .. } => detail.to_string(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(details, ["a", "b", "a", "b", "a", "b", "c", "a", "b"]);
}

#[test]
fn a_held_trace_records_this_threads_entries_and_keeps_others_waiting_until_released() {
    let trace = Trace::new();
    let held = trace.hold();
    let again = trace.hold();
    trace.push(gate("first"));
    std::thread::scope(|scope| {
        let other = scope.spawn(|| trace.push(gate("other")));
        trace.push(gate("second"));
        drop(again);
        trace.push(gate("third"));
        assert_eq!(
            trace.len(),
            3,
            "the other thread waits while this one holds the trace"
        );
        drop(held);
        other
            .join()
            .expect("the other thread records once the trace is released");
    });
    let details: Vec<String> = trace.entries().iter().map(ToString::to_string).collect();
    assert_eq!(
        details,
        ["first", "second", "third", "other"].map(|d| format!("gate:normalize passed ({d})"))
    );
}
