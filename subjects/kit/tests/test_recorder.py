"""The recorder keeps the step thread's events, and drops those of an attempt the subject retries."""

from __future__ import annotations

from devsim_subject_kit.recorder import Recorder


def test_an_attempt_that_raises_leaves_no_events():
    recorder = Recorder()
    with recorder.capture() as events:
        recorder.record("kept", 0)
        try:
            with recorder.undone_on_error():
                recorder.record("dropped", 1)
                raise ValueError("the attempt fails")
        except ValueError:
            pass
        with recorder.undone_on_error():
            recorder.record("kept too", 1)
    assert [e["event"] for e in events] == ["kept", "kept too"]
