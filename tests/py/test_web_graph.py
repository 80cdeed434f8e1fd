"""The workflow drawing's layout (pgq_thin.web.graph): a pure function of pgq.workflow's rows,
so it is checked on rows as the function returns them."""

from __future__ import annotations

from typing import Any

from pgq_thin.web.graph import MAX_DRAWN, draw, layout


def row(i: int, state: str, *parents: int, anyway: bool = False) -> dict[str, Any]:
    return {
        "id": i,
        "entrypoint": f"ep{i}",
        "state": state,
        "parents": [{"id": p, "state": "pending", "run_anyway": anyway} for p in parents],
        "children": [],
    }


def test_columns_follow_the_deepest_parent_and_rows_the_parents() -> None:
    # 1 -> 2 -> 4, 1 -> 3, 3 -> 5, 4 -> 5: 5's deepest parent is 4 (column 2).
    graph = [row(1, "successful"), row(2, "queued", 1), row(3, "queued", 1),
             row(4, "waiting", 2), row(5, "waiting", 3, 4), row(6, "waiting", 3)]  # fmt: skip
    lay = layout(graph)
    assert {i: c for i, (c, _) in lay.place.items()} == {1: 0, 2: 1, 3: 1, 4: 2, 5: 3, 6: 2}
    assert (lay.columns, lay.rows) == (4, 2)
    # 6's parent 3 is below 2, so 6 is placed below 4 (whose parent is 2).
    assert lay.place[4][1] < lay.place[6][1]
    assert sorted((p, c) for p, c, _, _ in lay.edges) == [
        (1, 2),
        (1, 3),
        (2, 4),
        (3, 5),
        (3, 6),
        (4, 5),
    ]


def test_an_edge_to_a_job_outside_the_rows_is_left_out_and_big_graphs_are_not_drawn() -> None:
    lay = layout([row(7, "waiting", 3), row(8, "waiting", 7)])
    assert lay.place == {7: (0, 0), 8: (1, 0)} and [e[:2] for e in lay.edges] == [(7, 8)]
    assert draw([]) is None
    big = [row(i, "queued") for i in range(1, MAX_DRAWN + 2)]
    assert draw(big) is None
    svg = draw(big[:MAX_DRAWN], current=1)
    assert svg is not None and svg.count('class="wf-node"') == MAX_DRAWN
    assert 'stroke-width="2.5"' in svg  # the current job


def test_text_is_escaped() -> None:
    graph = [row(1, "queued")]
    graph[0]["entrypoint"] = "<script>"
    svg = draw(graph)
    assert svg is not None and "<script>" not in svg and "&lt;script&gt;" in svg
