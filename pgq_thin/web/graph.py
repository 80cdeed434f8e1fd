"""A workflow drawn as SVG on the job page (no script, no CDN): one box per job, coloured by its
state, in columns by depth, with an arrow from each parent to each child styled by the edge's
state (pending: dashed; satisfied: solid; failed: red; runs anyway: dotted).

The rows are ``pgq.workflow``'s (:meth:`pgq_thin.admin.AsyncAdmin.workflow`); this module only
places them. A job may only depend on jobs enqueued before it, so id order is a topological
order: a job's column is one more than its deepest parent's, and within a column jobs are
ordered by the mean row of their parents (fewer crossings), then by id. Graphs of more than
``MAX_DRAWN`` jobs are not drawn (the table below lists them). The markup is built from numbers
and escaped text only, so it is safe to put in a page as is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from markupsafe import Markup

__all__ = ["MAX_DRAWN", "Layout", "draw", "layout"]

MAX_DRAWN = 300
BOX_W, BOX_H, GAP_X, GAP_Y, PAD = 150, 30, 56, 12, 6
FILL = {
    "waiting": ("#efe8d6", "#6b5316"),
    "scheduled": ("#eef0ff", "#3b4a9a"),
    "queued": ("#e1ecfb", "#1f4e94"),
    "running": ("#dcf2ff", "#055a8c"),
    "successful": ("#dff3e4", "#237a3b"),
    "failed": ("#fde3e1", "#b42318"),
    "canceled": ("#eceff3", "#555555"),
}
PRUNED = ("#ffffff", "#68717d")


@dataclass(frozen=True)
class Layout:
    """Where each job goes: ``place[id] = (column, row)``, with the edges as (parent, child,
    state, run_anyway) between jobs of the drawing."""

    place: Mapping[int, tuple[int, int]]
    edges: Sequence[tuple[int, int, str, bool]]
    columns: int
    rows: int


def layout(graph: Sequence[Any]) -> Layout:
    """Columns by depth, rows by the parents' mean row (see the module docstring)."""
    ids = sorted(int(g["id"]) for g in graph)
    known = set(ids)
    by_id = {int(g["id"]): g for g in graph}
    edges = [
        (int(p["id"]), i, str(p["state"]), bool(p["run_anyway"]))
        for i in ids
        for p in by_id[i]["parents"] or []
        if int(p["id"]) in known
    ]
    parents: dict[int, list[int]] = {i: [] for i in ids}
    for parent, child, _, _ in edges:
        parents[child].append(parent)
    column: dict[int, int] = {}
    for i in ids:  # id order is topological
        column[i] = 1 + max((column[p] for p in parents[i] if p in column), default=-1)
    place: dict[int, tuple[int, int]] = {}
    columns = 1 + max(column.values(), default=-1)
    for c in range(columns):
        members = [i for i in ids if column[i] == c]

        def mean_parent_row(i: int) -> float:
            rows = [place[p][1] for p in parents[i] if p in place]
            return sum(rows) / len(rows) if rows else -1.0

        members.sort(key=lambda i: (mean_parent_row(i), i))
        for row, i in enumerate(members):
            place[i] = (c, row)
    rows = 1 + max((r for _, r in place.values()), default=-1)
    return Layout(place, edges, columns, rows)


def draw(graph: Sequence[Any], current: int | None = None) -> Markup | None:
    """The workflow as one ``<svg>``, each box a link to its job page; None when the graph is
    empty or has more than ``MAX_DRAWN`` jobs."""
    if not graph or len(graph) > MAX_DRAWN:
        return None
    lay = layout(graph)
    by_id = {int(g["id"]): g for g in graph}

    def corner(i: int) -> tuple[int, int]:
        c, r = lay.place[i]
        return PAD + c * (BOX_W + GAP_X), PAD + r * (BOX_H + GAP_Y)

    width = PAD * 2 + lay.columns * BOX_W + (lay.columns - 1) * GAP_X
    height = PAD * 2 + lay.rows * BOX_H + (lay.rows - 1) * GAP_Y
    parts = [
        f'<svg class="wf-graph" id="workflow-graph" width="{width}" height="{height}"'
        f' viewBox="0 0 {width} {height}" role="img" aria-label="workflow of {len(graph)} jobs">',
        '<defs><marker id="wf-arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7"'
        ' markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#8a94a0"/>'
        "</marker></defs>",
    ]
    for parent, child, state, anyway in lay.edges:
        x1, y1 = corner(parent)
        x2, y2 = corner(child)
        x1, y1, y2 = x1 + BOX_W, y1 + BOX_H // 2, y2 + BOX_H // 2
        mid = (x1 + x2) // 2
        style = "anyway" if anyway and state == "pending" else state
        parts.append(
            f'<path class="wf-edge e-{escape(style)}" data-from="{parent}" data-to="{child}"'
            f' d="M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}" marker-end="url(#wf-arrow)"/>'
        )
    for i in sorted(lay.place):
        x, y = corner(i)
        g = by_id[i]
        state = str(g["state"])
        fill, ink = FILL.get(state, PRUNED)
        entrypoint = str(g["entrypoint"] or "")
        label = f"{i} {entrypoint}"
        title = f"job {i} {entrypoint}: {state}"
        if len(label) > 21:
            label = label[:20] + "…"
        here = ' stroke-width="2.5"' if i == current else ""
        parts.append(
            f'<a href="/jobs/{i}" class="wf-node" data-job="{i}" data-state="{escape(state)}">'
            f"<title>{escape(title)}</title>"
            f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="5" fill="{fill}"'
            f' stroke="{ink}"{here}/>'
            f'<text x="{x + 8}" y="{y + 19}" fill="{ink}">{escape(label)}</text></a>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))
