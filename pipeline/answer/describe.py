"""What a data directory offers, as plain JSON-ready dicts: every variant (built, or the command
that builds it) and what it takes to draw and ask one of its positions (its view, rules, start,
the fields that name a position, a board's size). `serve` renders them; nothing here knows
HTTP."""

from __future__ import annotations

from typing import Any

from pipeline.answer.answers import Answers
from pipeline.answer.boards import DEFAULT_DEPTH, MAX_DEPTH
from pipeline.store.directory import Entry


def listing(answers: Answers) -> dict[str, Any]:
    """Every variant: the built ones with what the page needs, the damaged ones (built, their
    tables unreadable) with why, the others with a command."""
    snap = answers.directory.snapshot()
    built, unbuilt, damaged = [], [], []
    for entry in snap.entries.values():
        item = {
            "name": entry.name,
            "family": entry.family,
            "view": entry.view,
            "description": entry.variant.description,
        }
        if entry.damaged:
            damaged.append({**item, "error": entry.damaged})
        elif entry.built:
            built.append({**item, "own_files": entry.own})
        else:
            # the full game is searched without tables (its build needs a GPU)
            build = entry.build_command() if entry.variant.builds_anywhere else None
            unbuilt.append({**item, "build": build, "searchable": entry.view == "boards"})
    return {
        "built": built,
        "unbuilt": unbuilt,
        "damaged": damaged,
        "problems": list(snap.problems),
    }


def describe(answers: Answers, entry: Entry) -> dict[str, Any]:
    """What the page needs to draw ``entry``'s positions: rules, view, start, fields."""
    out: dict[str, Any] = {
        "name": entry.name,
        "family": entry.family,
        "view": entry.view,
        "description": entry.variant.description,
        "rules": entry.rules,
        "built": entry.built,
        "tables": sorted(entry.files),
    }
    if entry.view == "boards":
        rules = answers.board_rules(entry.variant)
        out["board"] = {"columns": rules.columns, "rows": rules.rows, "faces": rules.faces}
        out.update(exact=entry.built, default_depth=DEFAULT_DEPTH, max_depth=MAX_DEPTH)
        out["start"] = {"board": rules.text(rules.start())}
        return out
    if not entry.built:
        return out
    game = answers.game(entry.variant)
    rules = entry.rules or {}
    start = game.start_state()
    if entry.view == "rows":
        out["columns"] = int(rules.get("columns", 9))
        out["back_reversed"] = bool(rules.get("back_reversed", True))
        out["start"] = {"state": game.state_code(start)}
        return out
    if entry.view == "tiles":
        out["tiles"] = int(rules.get("tiles", 9))
    out["fields"] = answers.fields(entry.variant)
    out["start"] = {"tiles": game.state_text(start)}
    if out["fields"]:  # the game's first position: player 1's, whose fields are none but the seat
        state = answers.expect(entry.variant, state_id=start)
        out["start"].update({k: v for k, v in state.fields.items() if v is not None})
    return out
