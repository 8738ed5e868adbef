"""squall.web.history: the dashboard's seconds kept as compressed JSON text."""

import json
import random

from squall.web import page
from squall.web.history import MINUTE, Seconds, page_text


def second(t, endpoints=3):
    """A second shaped as the engine's live stream gives it (web/README.md, POINT)."""
    rows = [
        {
            "method": "GET",
            "name": f"/item/{i}\nline two </script>",  # a name with a newline and markup, as names may hold
            "requests": 100 + t + i,
            "failures": t % 3,
            "percentiles_us": {str(p): 1000 * p + t for p in (50, 75, 90, 95, 99, 100)},
            "status_codes": {"200": 100 + t + i},
        }
        for i in range(endpoints)
    ]
    return {"t": t, "unix": 1_700_000_000 + t, "requests": 300 + t, "failures": t % 3, "endpoints": rows}


def test_every_start_reads_exactly_the_seconds_from_it():
    """Across the minute boundaries: each start gives the seconds from it, in order, each once, as they were."""
    seconds = Seconds(page.to_json)
    given = [second(t) for t in range(2 * MINUTE + 17)]
    for i in range(0, len(given), 7):  # handed over a few at a time, as the live stream does
        seconds.extend(given[i : i + 7])
    assert len(seconds) == len(given)
    for start in (0, 1, MINUTE - 1, MINUTE, MINUTE + 1, 2 * MINUTE, 2 * MINUTE + 16, 2 * MINUTE + 17, 500):
        reader = seconds.reader(start)
        assert reader.decoded() == given[start:], start
        assert json.loads(reader.json_array()) == given[start:], start
    assert seconds.last == given[-1] and seconds.first_unix == given[0]["unix"]


def test_a_reader_is_a_snapshot():
    """What a reader holds does not change as seconds come (it is read outside the store's lock)."""
    seconds = Seconds(page.to_json)
    seconds.extend([second(t) for t in range(MINUTE - 1)])
    reader = seconds.reader(MINUTE - 3)
    seconds.extend([second(t) for t in range(MINUTE - 1, MINUTE + 5)])  # closes the minute, opens another
    assert [s["t"] for s in reader.decoded()] == [MINUTE - 3, MINUTE - 2]
    assert [s["t"] for s in seconds.reader(MINUTE - 3).decoded()] == list(range(MINUTE - 3, MINUTE + 5))


def test_an_hour_of_seconds_is_kept_compactly():
    """An hour of seconds of 7 endpoints: the compressed minutes hold it in a fraction of its JSON text,
    itself a fraction of the objects (the numbers vary from second to second, as a run's do)."""
    rnd = random.Random(1)
    seconds = Seconds(page.to_json)
    text = 0
    for t in range(3600):
        s = second(t, endpoints=7)
        for e in s["endpoints"]:
            e["percentiles_us"] = {k: v + rnd.randrange(5000) for k, v in e["percentiles_us"].items()}
        text += len(page.to_json(s))
        seconds.extend([s])
    kept = sum(len(m) for m in seconds._minutes) + sum(len(t) for t in seconds._open)
    assert kept < text / 4, (kept, text)
    assert len(seconds.reader(0).decoded()) == 3600


def test_the_page_text_leaves_out_only_the_histograms():
    """The seconds' HDR histograms (for merges; a third of a second's text, incompressible) are not kept
    for the page; everything else is, as it was."""
    s = second(3)
    s["histogram"] = "HISTFAAAA..."
    for e in s["endpoints"]:
        e["histogram"] = "HISTFAAAB..."
    kept = json.loads(page_text(s))
    assert "histogram" not in kept and all("histogram" not in e for e in kept["endpoints"])
    s.pop("histogram")
    for e in s["endpoints"]:
        e.pop("histogram")
    assert kept == s
    seconds = Seconds()  # page_text by default: what the dashboard's store keeps
    seconds.extend([dict(second(0), histogram="HISTF")])
    assert "histogram" not in seconds.reader(0).json_array()
