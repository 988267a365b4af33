"""Block-wise GrepSearch and indexed ReadFile: the edges of blocks, pieces and line endings.

Tiny block sizes make every file span many blocks; results are compared with a plain
line-by-line reference computed here.
"""

from __future__ import annotations

import os
import random

import pytest
import regex

from judge.llm.tools import MAX_RESULTS_CAP, TranscriptTools, line_index

WORDS = ["alpha", "Beta", "gamma", "NEEDLE", "needle", "été", "delta", "x", "", "ok:", "a b", "a"]


def make_lines(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12))) for _ in range(count)]


def reference(lines: list[str], query: str, is_regex: bool, limit: int = 20) -> list[str]:
    hits = []
    for number, line in enumerate(lines, 1):
        if is_regex:
            found = regex.search(query, line, regex.IGNORECASE | regex.MULTILINE) is not None
        else:
            found = query.casefold() in line.casefold()
        if found:
            hits.append(f"{number}: {line}")
    return hits[:limit]


def grep(tools: TranscriptTools, query: str, is_regex: bool = False, limit: int = 20) -> list[str]:
    out = tools.GrepSearch(query, is_regex, limit)
    assert "Error" not in out and "stopped" not in out, out
    return [] if out.startswith("No lines match") else out.splitlines()[1:]


def read(tools: TranscriptTools, start: int, end: int) -> list[str]:
    """The numbered lines of a ReadFile answer (without its header and footer)."""
    out = tools.ReadFile(str(tools.path), start, end).splitlines()
    assert out[0].startswith(f"Transcript lines {start}-"), out[0]
    return [line for line in out[1:] if not line.endswith(f"continue from line {end + 1}]")]


@pytest.mark.parametrize("block", [16, 37, 64, 1000])
@pytest.mark.parametrize(
    ("query", "is_regex"),
    [("needle", False), ("a b", False), ("ÉTÉ", False), (r"^needle|gamma$", True), (r"a\s+b", True)],
)
def test_grep_matches_a_line_by_line_reference_at_any_block_size(tmp_path, block, query, is_regex):
    lines = make_lines(400, seed=block)
    path = tmp_path / "t.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tools = TranscriptTools(path, block_bytes=block)
    assert grep(tools, query, is_regex, MAX_RESULTS_CAP) == reference(lines, query, is_regex, MAX_RESULTS_CAP)
    # and far into the file: the last hits, with exact line numbers after many blocks
    expected = reference(lines[300:], query, is_regex, MAX_RESULTS_CAP)
    tail = [f"{int(hit.split(':')[0]) + 300}:{hit.split(':', 1)[1]}" for hit in expected]
    path.write_text("\n".join(["filler"] * 300 + lines[300:]) + "\n", encoding="utf-8")
    assert grep(tools, query, is_regex, MAX_RESULTS_CAP) == tail


def test_a_hit_across_every_block_boundary_is_found(tmp_path):
    path = tmp_path / "t.txt"
    for shift in range(20):
        path.write_text("." * shift + "the NEEDLE here\nnext\n")
        assert grep(TranscriptTools(path, block_bytes=16), "needle") == [f"1: {'.' * shift}the NEEDLE here"]


def test_max_results_across_blocks(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("".join(f"{i} {'hit' if i % 3 == 0 else 'miss'}\n" for i in range(1, 301)))
    tools = TranscriptTools(path, block_bytes=16)
    out = tools.GrepSearch("HIT", False, 7)
    assert out.splitlines()[1:] == [f"{i}: {i} hit" for i in range(3, 22, 3)]
    assert "more exist" in out
    out = tools.GrepSearch("hit", False, 100)
    assert len(out.splitlines()) == 101 and out.splitlines()[-1] == "300: 300 hit"
    assert "more exist" not in out


def test_lines_longer_than_a_block_keep_their_numbers(tmp_path):
    path = tmp_path / "t.txt"
    long_line = "y" * 150 + " NEEDLE " + "z" * 100  # several blocks of 100, under four
    huge_line = "q" * 1000 + " NEEDLE " + "w" * 1000  # many blocks: searched in pieces
    path.write_text(f"first\n{long_line}\nmiddle needle\n{huge_line}\nafter NEEDLE\n")
    tools = TranscriptTools(path, block_bytes=100)
    assert grep(tools, "needle") == [
        f"2: {long_line}",
        "3: middle needle",
        grep(tools, "needle")[2],
        "5: after NEEDLE",
    ]
    huge = grep(tools, "needle")[2]
    assert huge.startswith("4: …") and "q NEEDLE w" in huge and "line truncated" in huge
    assert len(huge) < 600  # clipped around the match, not the whole line
    assert grep(tools, r"q NEEDLE w", True)[0].startswith("4: ")
    assert grep(tools, "after") == ["5: after NEEDLE"]
    window = read(tools, 3, 5)
    assert window[0] == "     3\tmiddle needle"
    assert window[1].startswith("     4\t" + "q" * 1000) and "[line truncated: 2008 chars]" in window[1]
    assert window[2] == "     5\tafter NEEDLE"


def test_a_match_in_the_overlap_of_two_pieces_is_reported_once(tmp_path):
    path = tmp_path / "t.txt"
    for shift in range(0, 130, 7):
        path.write_text("a" * shift + "NEEDLE" + "b" * 300 + "NEEDLE" + "c" * 50 + "\nend needle\n")
        assert [hit.split(":")[0] for hit in grep(TranscriptTools(path, block_bytes=32), "needle")] == [
            "1",
            "2",
        ]


def test_crlf_line_endings(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"one\r\ntwo needle\r\nthree\r\n")
    tools = TranscriptTools(path, block_bytes=16)
    assert grep(tools, "needle") == ["2: two needle"]
    assert grep(tools, r"needle$", True) == ["2: two needle"]
    assert grep(tools, r"^three$", True) == ["3: three"]
    assert read(tools, 1, 3) == ["     1\tone", "     2\ttwo needle", "     3\tthree"]
    assert tools.line_count() == 3


def test_file_without_a_trailing_newline(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("one\ntwo\nlast NEEDLE")
    tools = TranscriptTools(path, block_bytes=16)
    assert tools.line_count() == 3
    assert grep(tools, "needle") == ["3: last NEEDLE"]
    assert grep(tools, r"needle$", True) == ["3: last NEEDLE"]
    assert read(tools, 2, 9) == ["     2\ttwo", "     3\tlast NEEDLE"]


def test_empty_matches_do_not_invent_lines(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("a\n\nb\n")
    tools = TranscriptTools(path, block_bytes=16)
    assert grep(tools, "^$", True) == ["2: "]
    assert grep(tools, "x*", True) == ["1: a", "2: ", "3: b"]
    path.write_text("")
    assert "No lines match" in tools.GrepSearch("^", True)
    assert "only 0 lines" in tools.ReadFile("t", 1, 2)


def test_a_regex_match_over_a_newline_does_not_count(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("foo\nbar\nfoo bar\n")
    tools = TranscriptTools(path, block_bytes=16)
    assert grep(tools, r"foo\s+bar", True) == ["3: foo bar"]
    assert grep(tools, r"o[^x]*b", True) == ["3: foo bar"]
    assert "No lines match" in tools.GrepSearch("foo\nbar", False)


def test_non_ascii_queries_fold_case_fully(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("ascii STRASSE\nÉtÉ chaud\nnothing\nΣΊΣΥΦΟΣ\n", encoding="utf-8")
    tools = TranscriptTools(path, block_bytes=16)
    assert grep(tools, "straße") == ["1: ascii STRASSE"]
    assert grep(tools, "été") == ["2: ÉtÉ chaud"]
    assert grep(tools, "σίσυφος") == ["4: ΣΊΣΥΦΟΣ"]
    assert grep(tools, "été", True) == ["2: ÉtÉ chaud"]


def test_invalid_utf8_does_not_break_the_tools(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"ok\n\xff\xfe bad NEEDLE\n\xc3\n")
    tools = TranscriptTools(path, block_bytes=16)
    assert grep(tools, "needle") == ["2: \ufffd\ufffd bad NEEDLE"]
    assert grep(tools, "bad", True) == ["2: \ufffd\ufffd bad NEEDLE"]
    assert read(tools, 3, 3) == ["     3\t\ufffd"]


@pytest.mark.parametrize("block", [16, 100, 4096])
def test_read_file_windows_anywhere_match_the_lines(tmp_path, block):
    lines = make_lines(3000, seed=7)
    path = tmp_path / "t.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tools = TranscriptTools(path, block_bytes=block)
    assert tools.line_count() == 3000
    for start in (1, 2, 17, 999, 1000, 1001, 2500, 2990, 3000):
        end = min(start + 9, 3000)
        expected = [f"{n:>6}\t{lines[n - 1]}" for n in range(start, end + 1)]
        assert read(tools, start, start + 9) == expected


def test_the_index_follows_the_file_when_it_changes(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("one\ntwo\n")
    tools = TranscriptTools(path, block_bytes=16)
    assert tools.line_count() == 2
    with path.open("a") as handle:
        handle.write("three\nfour\n")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert tools.line_count() == 4
    assert read(tools, 4, 4) == ["     4\tfour"]
    # built once per file version, whichever instance asks
    assert line_index(path) is line_index(path)
    assert read(TranscriptTools(path), 3, 3) == ["     3\tthree"]


def test_a_literal_search_out_of_time_says_where_it_stopped(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("needle\n" * 50)
    out = TranscriptTools(path, grep_seconds=0, block_bytes=16).GrepSearch("needle", False)
    assert out.startswith("Search for 'needle' stopped at line 1: time limit")


def test_a_slow_scan_stops_at_the_time_limit_with_the_line_reached(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("some line\n" * 100_000 + "needle\n")
    out = TranscriptTools(path, grep_seconds=0.05, block_bytes=16).GrepSearch("needle", True)
    assert out.startswith("Search for 'needle' stopped at line ")
    assert 1 < int(out.split("stopped at line ")[1].split(":")[0]) < 100_001


def test_multibyte_characters_across_pieces(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("first\n" + "é" * 301 + "NEEDLE" + "ü" * 300 + "\nlast\n", encoding="utf-8")
    tools = TranscriptTools(path, block_bytes=32)  # pieces of 128 bytes, cut inside characters
    for query in ("needle", "éneedleü", "é+needleü+$"):
        [hit] = grep(tools, query, is_regex=query.endswith("$"))
        assert hit.startswith("2: …") and "éNEEDLEü" in hit and "\ufffd" not in hit.split("… [")[0]
    assert grep(tools, "last") == ["3: last"]
