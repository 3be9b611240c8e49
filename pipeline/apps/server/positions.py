"""Answers about one position of any built variant, as plain JSON-able dicts for the server.

Three sources, picked per variant:

* **DuckDB over the tables** (every variant in the shared files, and the Knucklebones boards
  there): one connection for the process, a cursor per request, bound parameters only. A shared
  file keeps each variant in row groups of its own with min/max statistics, so a lookup reads a
  few row groups of one variant.
* **Value arrays** for the big variants stored on their own (boxes of 13 tiles or more, the
  large Knucklebones boards). Their files keep the solver's order (a box's states by number of
  open tiles, its policy by layer), so the row groups' state_id ranges overlap and DuckDB reads
  a million rows per point lookup (25-35 ms measured on the 24-tile box; see
  docs/benchmarks.md). Their ``value`` column (and a box's ``dice``) is read once, a row group at
  a time, into arrays indexed by state id; a move's value is then the value of the state it
  leads to (the pipeline's own formula, :func:`pipeline.analysis.answers._moves_from_states`),
  its regret what it loses against the best, the best the tie rule's pick. A memory budget
  (``cache_mb``) drops the least recently used arrays.
* **The Knucklebones search** (:mod:`pipeline.games.knucklebones.search`) for boards without
  tables (the full game): its values are estimates, marked so with their depth.

Every input is checked here (a one-line UsageError, which the server turns into a 400); a table
that is missing or unreadable is a TableError or TablesMissingError naming the file, and only
that variant's answers fail.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.apps.server.catalog import Catalog, Entry
from pipeline.errors import TableError, TablesMissingError, UsageError
from pipeline.solve.tolerance import TIE_TOLERANCE

#: Knucklebones search depth (placements) used when a request names none, and the deepest one
#: the server runs (deeper searches take seconds on the full game and hold a worker).
DEFAULT_DEPTH = 3
MAX_SERVER_DEPTH = 5
#: The largest text a state parameter may be (boards, tiles): far above any real one.
MAX_TEXT = 200
#: Distinct values of a state field listed for the page's menus (more: a number box).
MAX_CHOICES = 200
#: Columns of the N-player family that are the position's data, not what names it: the number
#: of players and every player's expected payoff (see data/README.md).
SHARE_COLUMNS = ("share_holder", "share_beaten", *(f"share_{k}" for k in range(1, 7)))
#: State columns that describe the tiles or the value rather than who plays: every other
#: non-null column of a variant's states (the N-player seat, best score and tie count) is a
#: field of the position, offered by the page as a menu.
NOT_FIELDS = frozenset(
    {
        "variant", "state_id", "tiles", "open_tiles", "n_open", "open_sum", "score", "terminal",
        "rank", "objective", "maximise", "value", "value_exact", "dice", "choice_options",
        "residual", "state", "front_tiles", "back_tiles", "exposed_sum", "mover_score",
        "opponent_score", "players", *SHARE_COLUMNS,
    }
)  # fmt: skip
#: The fields that name an N-player position (the seat to move, the lowest score before it,
#: how many players share it); two-player's ``p1_score`` (= best_score) stays accepted as a
#: parameter but is no menu of its own.
NPLAYER_FIELDS = ("player", "best_score", "best_count")
NPLAYER_SYNONYMS = ("p1_score",)
#: The game's messages name the CLI's options; a request names parameters.
_OPTION_NAMES = {
    "--p1-score": "p1_score", "--player": "player", "--best-score": "best_score",
    "--best-count": "best_count",
}  # fmt: skip


def is_nplayer(fields: list[dict[str, Any]]) -> bool:
    """Whether a variant's fields are the N-player family's (seat, best score, tie count)."""
    return {f["name"] for f in fields} == set(NPLAYER_FIELDS)


def check_int(name: str, text: str | None, low: int, high: int) -> int | None:
    """A whole number parameter within [low, high] (None when absent); UsageError otherwise."""
    if text is None or text == "":
        return None
    raw = text.strip()
    digits = raw[1:] if raw[:1] in "+-" else raw
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 12:
        raise UsageError(f"{name} must be a whole number, not {text[:40]!r}")
    value = int(raw)
    if not low <= value <= high:
        raise UsageError(f"{name} must be between {low} and {high}, not {value}")
    return value


def check_text(name: str, text: str | None) -> str | None:
    """A text parameter of reasonable length and printable characters."""
    if text is None:
        return None
    if len(text) > MAX_TEXT:
        raise UsageError(f"{name} is longer than {MAX_TEXT} characters")
    if not text.isprintable():
        raise UsageError(f"{name} holds characters that are not printable")
    return text


def _regret(best: float, value: float, sign: float) -> float:
    lost = (best - value) * sign
    return lost if lost > 0.0 else 0.0


@dataclass
class Arrays:
    """A big variant's states as arrays by state id."""

    value: np.ndarray
    dice: np.ndarray | None
    maximise: bool
    objective: str

    @property
    def nbytes(self) -> int:
        return self.value.nbytes + (0 if self.dice is None else self.dice.nbytes)


class Positions:
    """Answers for one data directory (thread-safe; the server calls it from worker threads)."""

    def __init__(self, data_dir: Path, cache_mb: int = 256) -> None:
        import duckdb

        self.data_dir = Path(data_dir)
        self.catalog = Catalog(self.data_dir, self.file_rules)
        self.con = duckdb.connect(":memory:", config={"enable_object_cache": True})
        self._duckdb_error = duckdb.Error
        self.cache_bytes = cache_mb * 1024 * 1024
        self._arrays: OrderedDict[str, Arrays] = OrderedDict()
        self._arrays_lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}
        self._fields: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._games: dict[str, Any] = {}
        self._search_lock = threading.Lock()
        self._searchers: dict[str, Any] = {}

    def in_memory(self, name: str) -> bool:
        """Whether a position of ``name`` is answered from arrays already read (microseconds,
        no I/O: the server answers it on its event loop rather than in a worker thread)."""
        entry = self.catalog.snapshot().entries.get(name)
        if entry is None or not entry.own or entry.name not in self._arrays:
            return False
        return entry.view == "boards" or entry.variant.codec is not None

    def searched(self, name: str) -> bool:
        """Whether ``name``'s positions are answered by the Knucklebones search (a board
        without tables): compiled work of milliseconds to seconds that holds the GIL, which the
        server runs in its search processes (:mod:`pipeline.apps.server.searches`)."""
        entry = self.catalog.snapshot().entries.get(name)
        return entry is not None and entry.view == "boards" and not entry.built

    # -- DuckDB ------------------------------------------------------------------------------

    def rows(self, path: Path, sql: str, **params: Any) -> list[dict[str, Any]]:
        """Rows of ``sql`` (which reads ``read_parquet($path)``), with bound parameters."""
        try:
            with self.con.cursor() as cur:
                cur.execute(sql, {"path": str(path), **params})
                names = [d[0] for d in cur.description]
                return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        except self._duckdb_error as exc:
            first = (str(exc).splitlines() or ["unreadable"])[0]
            raise TableError(f"{path} is not a readable table ({first}); rebuild it") from None

    def file_rules(self, path: Path) -> dict[str, Any]:
        """The rules a table file records (its ``stb.rules`` metadata), by variant; read by
        DuckDB, so listing the variants loads neither pyarrow nor polars."""
        import json

        found = self.rows(
            path,
            "select decode(value) as v from parquet_kv_metadata($path) "
            "where decode(key) = 'stb.rules'",
        )
        return json.loads(found[0]["v"]) if found else {}

    def table(self, entry: Entry, table: str) -> Path:
        """The file holding ``entry``'s rows of ``table``; TablesMissingError when none does."""
        path = entry.files.get(table)
        if path is None or not path.exists():
            raise TablesMissingError(
                f"{entry.name} has no {table} table in {self.data_dir}: "
                f"run `{entry.build_command()}`"
            )
        return path

    # -- the index -----------------------------------------------------------------------------

    def index(self) -> dict[str, Any]:
        """Every variant: the built ones with what the page needs, the others with a command."""
        snap = self.catalog.snapshot()
        built, unbuilt = [], []
        for entry in snap.entries.values():
            item = {
                "name": entry.name,
                "family": entry.family,
                "view": entry.view,
                "description": entry.variant.description,
            }
            if entry.built:
                built.append({**item, "own_files": entry.own})
            else:
                searchable = entry.view == "boards"
                unbuilt.append(
                    {
                        **item,
                        "build": None if entry.name == "knucklebones" else entry.build_command(),
                        "searchable": searchable,
                    }
                )
        return {"built": built, "unbuilt": unbuilt, "problems": list(snap.problems)}

    def describe(self, name: str) -> dict[str, Any]:
        """What the page needs to draw a variant's positions: rules, view, start, fields."""
        entry = self.catalog.entry(name)
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
            game = self._kb_game(entry)
            out["board"] = {"columns": game.r.columns, "rows": game.r.rows, "faces": game.r.faces}
            out["exact"] = entry.built
            out["default_depth"] = DEFAULT_DEPTH
            out["max_depth"] = MAX_SERVER_DEPTH
            out["start"] = {"board": game.board_text(np.zeros(game.r.columns, dtype=np.int64))}
            return out
        if not entry.built:
            return out
        rules = entry.rules or {}
        if entry.view == "rows":
            out["columns"] = int(rules.get("columns", 9))
            out["back_reversed"] = bool(rules.get("back_reversed", True))
            out["start"] = {"state": "0" * out["columns"]}
            return out
        out["tiles"] = int(rules.get("tiles", 9))
        out["fields"] = [] if entry.variant.codec is not None else self.fields(entry)
        out["start"] = {"tiles": "".join(map(str, range(1, out["tiles"] + 1)))}
        if out["tiles"] > 9:
            out["start"]["tiles"] = ",".join(map(str, range(1, out["tiles"] + 1)))
        if out["fields"]:  # the game's first position: the state of the highest rank
            first = self.rows(
                self.table(entry, "states"),
                "select * from read_parquet($path) where variant = $v order by rank desc limit 1",
                v=entry.name,
            )
            if first:
                out["start"]["tiles"] = first[0]["tiles"]
                for f in out["fields"]:
                    if first[0].get(f["name"]) is not None:
                        out["start"][f["name"]] = first[0][f["name"]]
        return out

    def fields(self, entry: Entry) -> list[dict[str, Any]]:
        """The columns beyond the tiles that tell a variant's states apart, with their values:
        read from the states table (for the N-player games the seat, the best score before and
        how many hold it; their ``players`` and shares are data, see :data:`NOT_FIELDS`)."""
        path = self.table(entry, "states")
        key = (entry.name, str(path.stat().st_mtime_ns))
        if key in self._fields:
            return self._fields[key]
        names = [
            r["column_name"]
            for r in self.rows(path, "describe select * from read_parquet($path)")
            if r["column_name"] not in NOT_FIELDS
        ]
        if "best_score" in names:  # N-player: p1_score repeats best_score for two players
            names = [n for n in names if n not in NPLAYER_SYNONYMS]
        found: list[dict[str, Any]] = []
        for column in names:  # names come from the file's own schema, quoted; values are bound
            quoted = '"' + column.replace('"', '""') + '"'
            values = self.rows(
                path,
                f"select distinct {quoted} as v from read_parquet($path) "
                f"where variant = $v and {quoted} is not null order by 1 limit {MAX_CHOICES + 1}",
                v=entry.name,
            )
            if values:
                choices = [r["v"] for r in values]
                found.append(
                    {
                        "name": column,
                        "choices": choices if len(choices) <= MAX_CHOICES else None,
                        "optional": True,
                    }
                )
        self._fields[key] = found
        return found

    # -- tile games ----------------------------------------------------------------------------

    def position(self, name: str, params: Mapping[str, str]) -> dict[str, Any]:
        """The answer for one position (see the module docstring); ``params`` are the request's
        query parameters, checked here."""
        entry = self.catalog.entry(name)
        if entry.view == "boards":
            return self.board_position(entry, params)
        if not entry.built:
            raise TablesMissingError(f"{entry.name} is not built: run `{entry.build_command()}`")
        fields = (
            [] if entry.variant.codec is not None or entry.view == "rows" else self.fields(entry)
        )
        allowed = {"id", "tiles", "state", "roll", *(f["name"] for f in fields)}
        if is_nplayer(fields):
            allowed.update(NPLAYER_SYNONYMS)
        unknown = sorted(set(params) - allowed)
        if unknown:
            raise UsageError(
                f"unknown parameter {unknown[0][:40]!r} for {entry.name} "
                f"(known: {', '.join(sorted(allowed))})"
            )
        roll = check_int("roll", params.get("roll"), -(2**31), 2**31 - 1)
        if entry.own and entry.variant.codec is not None:
            return self._array_box(entry, params, roll)
        row = self._find_state(entry, params, fields)
        return self._table_answer(entry, row, roll, fields)

    def _find_state(
        self, entry: Entry, params: Mapping[str, str], fields: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The states row the parameters name: ``id``, or the tiles (with the fields), or for
        two rows of tiles the ``state`` digits."""
        states = self.table(entry, "states")
        select = "select * from read_parquet($path) where variant = $v"
        state_id = check_int("id", params.get("id"), 0, 2**62)
        tiles = check_text("tiles", params.get("tiles"))
        digits = check_text("state", params.get("state"))
        if state_id is None and entry.variant.codec is not None:
            if tiles is None:
                raise UsageError("name the position: tiles=1245 (the open tiles), or id=N")
            state_id = entry.variant.codec.parse(tiles) if tiles != "" else 0
        if state_id is None and tiles is not None and is_nplayer(fields):
            state_id = self._nplayer_state(entry, tiles, params)
        if state_id is not None:
            found = self.rows(states, f"{select} and state_id = $id", v=entry.name, id=state_id)
        elif digits is not None:
            if not digits or any(c not in "012" for c in digits):
                raise UsageError(
                    f"state {digits[:40]!r}: one digit 0, 1 or 2 per column (0 both tiles up, "
                    "1 front down, 2 both down)"
                )
            found = self.rows(states, f"{select} and state = $s", v=entry.name, s=digits)
        elif tiles is not None:
            sql = f"{select} and tiles = $tiles"
            bound: dict[str, Any] = {"tiles": tiles}
            for k, f in enumerate(fields):
                raw = params.get(f["name"])
                value = check_int(f["name"], raw, -(2**31), 2**31 - 1) if raw else None
                quoted = '"' + f["name"].replace('"', '""') + '"'
                sql += f" and {quoted} is not distinct from $f{k}"
                bound[f"f{k}"] = value
            found = self.rows(states, sql, v=entry.name, **bound)
        else:
            raise UsageError("name the position: tiles=..., state=... or id=N")
        if not found:
            raise UsageError(f"no such position of {entry.name} (not a state of its tables)")
        if found[0]["value"] is None:
            raise TablesMissingError(
                f"{entry.name} is enumerated but not solved: run `{entry.build_command()}`"
            )
        return found[0]

    def _nplayer_state(self, entry: Entry, tiles: str, params: Mapping[str, str]) -> int:
        """The state id of an N-player position: the game checks the seat (1..N), that a turn
        can end with the best score, that fewer players than sat before share it, and that
        player 1 is given none (a one-line UsageError otherwise)."""
        extra = {}
        for name in (*NPLAYER_FIELDS, *NPLAYER_SYNONYMS):
            value = check_int(name, params.get(name), -(2**31), 2**31 - 1)
            if value is not None:
                extra[name] = value
        try:
            return int(self._game(entry).parse_state(tiles, **extra))
        except UsageError as exc:
            message = str(exc)
            for option, name in _OPTION_NAMES.items():
                message = message.replace(option, name)
            raise UsageError(message) from None

    @staticmethod
    def _shares(row: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every player's expected payoff in an N-player state, as the states table holds it:
        one share for each earlier player holding the best score (which seats they are does not
        matter, so the table does not say), one for each earlier player above it, and one per
        seat from the mover's on. ``players`` is how many players get that share, so the
        shares weighted by it add up to 1 (the stake payoff: 0)."""
        seat, n = int(row["player"]), int(row["players"])
        count = int(row["best_count"] or 0)
        out: list[dict[str, Any]] = []
        if count:
            out.append({"who": "holder", "seat": None, "players": count,
                        "share": row["share_holder"]})  # fmt: skip
        if seat - 1 - count > 0:
            out.append({"who": "beaten", "seat": None, "players": seat - 1 - count,
                        "share": row["share_beaten"]})  # fmt: skip
        for k in range(seat, n + 1):
            out.append({"who": "mover" if k == seat else "later", "seat": k, "players": 1,
                        "share": row[f"share_{k}"]})  # fmt: skip
        return out

    def _state_out(self, entry: Entry, row: Mapping[str, Any], fields: list) -> dict[str, Any]:
        state = {
            "id": int(row["state_id"]),
            "tiles": row["tiles"],
            "value": row["value"],
            "objective": row["objective"],
            "maximise": bool(row["maximise"]),
            "dice": row["dice"],
            "choice_options": row["choice_options"],
            "terminal": bool(row["terminal"]),
            "fields": {f["name"]: row.get(f["name"]) for f in fields},
        }
        if entry.view == "rows":
            state["state"] = row.get("state")
        if is_nplayer(fields) and row.get("players") is not None:
            state["players"] = int(row["players"])
            state["shares"] = self._shares(row)
        return state

    def _link(self, entry: Entry, state: Mapping[str, Any], roll: int | None) -> str:
        from urllib.parse import urlencode

        if entry.view == "rows" and state.get("state") is not None:
            q: dict[str, Any] = {"state": state["state"]}
        elif state.get("tiles") is not None:
            q = {"tiles": state["tiles"]}
            q.update({k: v for k, v in state.get("fields", {}).items() if v is not None})
        else:
            q = {"id": state["id"]}
        if roll is not None:
            q["roll"] = roll
        return f"/{entry.name}/position?{urlencode(q)}"

    def _tables_head(self, entry: Entry, state: dict[str, Any], roll: int | None) -> dict[str, Any]:
        """The opening keys of an answer read from a variant's solved tables (exact)."""
        return {
            "variant": entry.name,
            "view": entry.view,
            "source": "tables",
            "exact": True,
            "state": state,
            "roll": roll,
            "link": self._link(entry, state, roll),
        }

    def _table_answer(
        self, entry: Entry, row: dict[str, Any], roll: int | None, fields: list
    ) -> dict[str, Any]:
        state = self._state_out(entry, row, fields)
        out = self._tables_head(entry, state, roll)
        policy = self.table(entry, "policy")
        rolls = self.rows(
            policy,
            "select roll, kind, best_move, value, n_moves, next_state_id from read_parquet($path) "
            "where variant = $v and state_id = $s order by roll",
            v=entry.name,
            s=state["id"],
        )
        out["rolls"] = [
            {"roll": r["roll"], "kind": r["kind"], "best": r["best_move"], "value": r["value"],
             "moves": r["n_moves"]}
            for r in rolls
        ]  # fmt: skip
        if roll is None:
            return out
        hit = [r for r in rolls if r["roll"] == roll]
        if not hit:
            possible = f"{rolls[0]['roll']}..{rolls[-1]['roll']}" if rolls else "none: it is over"
            raise UsageError(f"roll {roll} is impossible here (possible rolls: {possible})")
        out["outcome"] = {
            "kind": hit[0]["kind"], "value": hit[0]["value"], "next_id": hit[0]["next_state_id"]
        }  # fmt: skip
        moves = self.rows(
            self.table(entry, "moves"),
            "select move, next_state_id, next_tiles, value, regret, is_best "
            "from read_parquet($path) where variant = $v and state_id = $s and roll = $r "
            "order by regret, is_best desc, list_reverse_sort(move) desc nulls last",
            v=entry.name,
            s=state["id"],
            r=roll,
        )
        out["moves"] = [
            {"move": m["move"], "next_id": m["next_state_id"], "next_tiles": m["next_tiles"],
             "value": m["value"], "regret": m["regret"], "best": bool(m["is_best"])}
            for m in moves
        ]  # fmt: skip
        return out

    # -- big boxes: value arrays ----------------------------------------------------------------

    def arrays(self, entry: Entry) -> Arrays:
        """The variant's value (and dice) by state id, read once (least recently used dropped
        past the memory budget)."""
        with self._arrays_lock:
            found = self._arrays.get(entry.name)
            if found is not None:
                self._arrays.move_to_end(entry.name)
                return found
            loading = self._loading.setdefault(entry.name, threading.Lock())
        with loading:  # one thread reads the file; the others wait for it
            with self._arrays_lock:
                if entry.name in self._arrays:
                    return self._arrays[entry.name]
            path = self.table(entry, "states")
            with_dice = entry.view != "boards"
            need = self.rows(path, "select num_rows from parquet_file_metadata($path)")
            size = int(need[0]["num_rows"]) * (9 if with_dice else 8) if need else 0
            with self._arrays_lock:  # make room first, so the peak holds the budget too
                total = sum(a.nbytes for a in self._arrays.values())
                while self._arrays and total + size > self.cache_bytes:
                    total -= self._arrays.popitem(last=False)[1].nbytes  # (no name keeps it)
            # what value measures, from the rules (reading one row would cost a row group):
            # a box minimises its score and maximises a probability; Knucklebones maximises
            objective = str((entry.rules or {}).get("objective", "shut"))
            first = [{"objective": objective, "maximise": objective != "score" or not with_dice}]
            alone = set(self.file_rules(path)) == {entry.name}
            found = read_arrays(path, entry.name, with_dice, first, alone)
            with self._arrays_lock:
                self._arrays[entry.name] = found
            return found

    def _game(self, entry: Entry) -> Any:
        game = self._games.get(entry.name)
        if game is None:
            game = self._games[entry.name] = entry.variant.make()
        return game

    def _array_box(
        self, entry: Entry, params: Mapping[str, str], roll: int | None
    ) -> dict[str, Any]:
        codec = entry.variant.codec
        assert codec is not None
        arrays = self.arrays(entry)
        n = arrays.value.shape[0]
        state_id = check_int("id", params.get("id"), 0, n - 1)
        if state_id is None:
            tiles = check_text("tiles", params.get("tiles"))
            if tiles is None:
                raise UsageError("name the position: tiles=1245 (the open tiles), or id=N")
            state_id = codec.parse(tiles) if tiles != "" else 0
        if params.get("state") is not None:
            raise UsageError("state= names a Double Shutter position; give tiles= here")
        game = self._game(entry)
        allowed = game.dice_available(np.array([state_id], dtype=np.int64))
        choices = sorted(d for d, ok in allowed.items() if ok[0])
        dice = None if arrays.dice is None or state_id == 0 else int(arrays.dice[state_id])
        state = {
            "id": state_id,
            "tiles": codec.text(state_id),
            "value": float(arrays.value[state_id]),
            "objective": arrays.objective,
            "maximise": arrays.maximise,
            "dice": dice if dice else None,
            "choice_options": len(choices),
            "terminal": state_id == 0,
            "fields": {},
        }
        out = self._tables_head(entry, state, roll)
        sides = int((entry.rules or {}).get("sides", 6))
        possible = sorted({r for d in choices for r in range(d, d * sides + 1)})
        if roll is not None and roll not in possible:
            text = f"{possible[0]}..{possible[-1]}" if possible else "none: it is over"
            raise UsageError(f"roll {roll} is impossible here (possible rolls: {text})")
        best_of = self._box_best_all(entry, game, arrays, state_id, possible)
        stuck = stuck_value(game, state_id) if len(best_of) < len(possible) else None
        out["rolls"] = []
        for r in possible:
            best_mask, best, count = best_of.get(r, (0, stuck, 0))
            out["rolls"].append(
                {"roll": r, "kind": "move" if count else "end",
                 "best": _bits(best_mask) if count else None, "value": best, "moves": count}
            )  # fmt: skip
        if roll is None:
            return out
        moves = self._box_moves(entry, game, arrays, state_id, roll)
        out["outcome"] = {
            "kind": "move" if moves else "end",
            "value": moves[0]["value"] if moves else stuck,
            "next_id": None,
        }
        out["moves"] = moves
        return out

    def _box_legal(
        self, entry: Entry, game: Any, arrays: Arrays, state: int, roll: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The legal moves (masks) of a box's state for a roll, and the values they lead to."""
        masks = _subsets(entry.name, game, roll)
        legal = masks[(masks & state) == masks]
        return legal, arrays.value[state ^ legal]

    def _box_best(
        self, entry: Entry, game: Any, arrays: Arrays, state: int, roll: int
    ) -> tuple[int, float, int]:
        """(mask, value, number of legal moves) of the tie rule's best move: the best value,
        and among values within the tie tolerance of it the move holding the highest tile
        where two differ (the larger mask)."""
        legal, values = self._box_legal(entry, game, arrays, state, roll)
        if legal.size == 0:
            return 0, 0.0, 0
        best_value = float(values.max() if arrays.maximise else values.min())
        tol = TIE_TOLERANCE * max(1.0, abs(best_value))
        tied = np.abs(values - best_value) <= tol
        k = int(np.argmax(np.where(tied, legal, -1)))
        return int(legal[k]), float(values[k]), int(legal.size)

    def _box_best_all(
        self, entry: Entry, game: Any, arrays: Arrays, state: int, rolls: list[int]
    ) -> dict[int, tuple[int, float, int]]:
        """:meth:`_box_best` of every roll at once (a dozen numpy operations in all, rather
        than a dozen per roll); rolls without a legal move are left out."""
        masks, roll_of = _all_subsets(entry.name, game, tuple(rolls))
        ok = (masks & state) == masks
        legal, legal_roll = masks[ok], roll_of[ok]
        if legal.size == 0:
            return {}
        values = arrays.value[state ^ legal]
        change = np.empty(legal.size, dtype=bool)
        change[0] = True
        np.not_equal(legal_roll[1:], legal_roll[:-1], out=change[1:])
        starts = np.flatnonzero(change)
        reduce = np.maximum if arrays.maximise else np.minimum
        best = reduce.reduceat(values, starts)
        counts = np.diff(np.append(starts, legal.size))
        best_row = np.repeat(best, counts)
        tol = TIE_TOLERANCE * np.maximum(1.0, np.abs(best_row))
        pick = np.maximum.reduceat(np.where(np.abs(values - best_row) <= tol, legal, -1), starts)
        picked_value = arrays.value[state ^ pick]
        return {
            int(r): (int(m), float(v), int(c))
            for r, m, v, c in zip(legal_roll[starts], pick, picked_value, counts, strict=True)
        }

    def _box_moves(
        self, entry: Entry, game: Any, arrays: Arrays, state: int, roll: int
    ) -> list[dict[str, Any]]:
        """A box's moves for one roll, ranked as `stb-pipeline move` ranks them."""
        codec = entry.variant.codec
        assert codec is not None
        best_mask, best, count = self._box_best(entry, game, arrays, state, roll)
        if not count:
            return []
        legal, values = self._box_legal(entry, game, arrays, state, roll)
        sign = 1.0 if arrays.maximise else -1.0
        sep = "," if codec.n_tiles > 9 else ""  # the tables' tiles text
        out = [
            {"move": _bits(m), "next_id": state ^ m,
             "next_tiles": sep.join(map(str, _bits(state ^ m))),
             "value": float(v), "regret": _regret(best, float(v), sign), "best": m == best_mask,
             "_mask": m}
            for m, v in zip(legal.tolist(), values.tolist(), strict=True)
        ]  # fmt: skip
        out.sort(key=lambda m: m["_mask"], reverse=True)
        out.sort(key=lambda m: (m["regret"], not m["best"]))
        for m in out:
            del m["_mask"]
        return out

    # -- Knucklebones ---------------------------------------------------------------------------

    def _kb_game(self, entry: Entry) -> Any:
        """The board's game (its rules' board and die; no numba: the search loads it)."""
        from pipeline.games.knucklebones.game import Knucklebones, KnuckleRules

        key = f"kb:{entry.name}"
        game = self._games.get(key)
        if game is None:
            if entry.rules:  # built: the rules it was built with
                r = entry.rules
                game = Knucklebones(KnuckleRules(r["columns"], r["rows"], r["faces"]))
            else:  # searched: the search loads numba anyway
                from pipeline.apps.knucklebones.position import knucklebones_game

                game = knucklebones_game(entry.name)
            self._games[key] = game
        return game

    def board_position(self, entry: Entry, params: Mapping[str, str]) -> dict[str, Any]:
        """A Knucklebones position (MOVER;OPPONENT, the mover's board first) and, with a die,
        every column ranked: exact from the tables where the board is built, else searched."""
        from pipeline.games.knucklebones.game import read_board

        unknown = sorted(set(params) - {"board", "die", "depth"})
        if unknown:
            raise UsageError(
                f"unknown parameter {unknown[0][:40]!r} for {entry.name} (known: board, die, depth)"
            )
        game = self._kb_game(entry)
        board = check_text("board", params.get("board"))
        if board is None:
            board = game.board_text(np.zeros(game.r.columns, dtype=np.int64))
        if board.count(";") != 1:
            raise UsageError(f"board {board[:60]!r}: write the two boards as MOVER;OPPONENT")
        mine, theirs = board.split(";")
        die = check_int("die", params.get("die"), 1, game.r.faces)
        depth = check_int("depth", params.get("depth"), 1, MAX_SERVER_DEPTH) or DEFAULT_DEPTH
        # the boards as the search reads them (not through its module: that loads numba)
        pairs = game.pairs_of_boards(
            read_board(mine, game.r, "mover"), read_board(theirs, game.r, "opponent")
        )
        over = bool(game.terminal_mask(pairs[None, :])[0])
        objective = (entry.rules or {}).get("objective") or (
            "score" if entry.name.endswith("-score") else "wins"
        )
        m_score, o_score = (int(x[0]) for x in game.scores(pairs[None, :]))
        out: dict[str, Any] = {
            "variant": entry.name,
            "view": "boards",
            "board": game.board_text(pairs),
            "mover_score": m_score,
            "opponent_score": o_score,
            "objective": objective,
            "over": over,
            "die": die,
            "source": "tables" if entry.built else "search",
            "exact": entry.built,
            "depth": None if entry.built else depth,
        }
        from urllib.parse import urlencode

        q: dict[str, Any] = {"board": out["board"]}
        if die is not None:
            q["die"] = die
        if not entry.built and params.get("depth"):
            q["depth"] = depth
        out["link"] = f"/{entry.name}/position?{urlencode(q)}"
        if over:
            diff = m_score - o_score
            out["value"] = float(diff) if objective == "score" else 0.5 + 0.5 * float(np.sign(diff))
            out["columns"] = []
            return out
        if entry.built:
            self._kb_exact(entry, game, pairs, die, objective, out)
        else:
            self._kb_search(entry, game, pairs, die, depth, objective, out)
        return out

    def _kb_successors(self, game: Any, pairs: np.ndarray, die: int) -> list[tuple[int, Any]]:
        """(1-based column, the position the opponent then faces) for every legal column."""
        out = []
        for c in range(game.r.columns):
            placed = game.t.place[pairs[c], die - 1]
            if placed < 0:
                continue
            after = pairs.copy()
            after[c] = placed
            out.append((c + 1, game.t.swap[after]))
        return out

    def _kb_values(self, entry: Entry, ids: list[int]) -> dict[int, float]:
        """Exact values of states of a built board, by id."""
        if entry.own:
            arrays = self.arrays(entry)
            return {i: float(arrays.value[i]) for i in ids}
        found = self.rows(
            self.table(entry, "states"),
            "select state_id, value from read_parquet($path) where variant = $v "
            "and list_contains($ids, state_id)",
            v=entry.name,
            ids=ids,
        )
        return {r["state_id"]: r["value"] for r in found}

    def _kb_exact(
        self, entry: Entry, game: Any, pairs: np.ndarray, die: int | None, objective: str,
        out: dict[str, Any],
    ) -> None:  # fmt: skip
        here = int(game.canonical(pairs[None, :])[0])
        succ = self._kb_successors(game, pairs, die) if die is not None else []
        nxt_ids = [int(game.canonical(s[None, :])[0]) for _, s in succ]
        values = self._kb_values(entry, [here, *nxt_ids])
        if here not in values or any(i not in values for i in nxt_ids):
            raise TableError(f"{entry.name}'s states table lacks positions; rebuild it")
        out["value"] = values[here]
        cols = []
        for (col, seen), nid in zip(succ, nxt_ids, strict=True):
            v = values[nid]
            mine = 1.0 - v if objective == "wins" else -v
            cols.append({"column": col, "value": mine, "next": game.board_text(seen)})
        self._rank_columns(cols, out)

    def _kb_search(
        self, entry: Entry, game: Any, pairs: np.ndarray, die: int | None, depth: int,
        objective: str, out: dict[str, Any],
    ) -> None:  # fmt: skip
        from pipeline.apps.knucklebones.position import column_values
        from pipeline.games.knucklebones.search import Searcher

        with self._search_lock:  # one search at a time: the transposition table is shared
            searcher = self._searchers.get(entry.name)
            if searcher is None:
                searcher = self._searchers[entry.name] = Searcher(game)
            here = searcher.evaluate(pairs, depth)
            values = column_values(searcher, pairs, die, depth) if die is not None else []
        pick = "diff" if objective == "score" else "win"
        out["value"] = getattr(here, pick)
        out["win"], out["diff"], out["value_exact"] = here.win, here.diff, bool(here.exact)
        succ = dict(self._kb_successors(game, pairs, die)) if die is not None else {}
        cols = [
            {"column": cv.column, "value": getattr(cv.value, pick), "win": cv.value.win,
             "diff": cv.value.diff, "value_exact": bool(cv.value.exact),
             "next": game.board_text(succ[cv.column])}
            for cv in values
        ]  # fmt: skip
        self._rank_columns(cols, out, by_search=True)

    @staticmethod
    def _rank_columns(cols: list[dict[str, Any]], out: dict[str, Any], by_search=False) -> None:
        """Best first (the search's pick: win, then difference, then the lowest column)."""
        if by_search:
            cols.sort(key=lambda c: (-round(c["win"], 12), -c["diff"], c["column"]))
        else:
            cols.sort(key=lambda c: (-c["value"], c["column"]))
        best = cols[0]["value"] if cols else None
        for k, c in enumerate(cols):
            c["loss"] = _regret(best, c["value"], 1.0) if best is not None else None
            c["best"] = k == 0
        out["columns"] = cols


_SUBSETS: dict[tuple[str, int], np.ndarray] = {}


def _subsets(name: str, game: Any, roll: int) -> np.ndarray:
    """The sets of tiles (masks) summing to ``roll`` under the rules, per variant and roll."""
    key = (name, roll)
    found = _SUBSETS.get(key)
    if found is None:
        masks = [m for m, total in game.subsets_by_sum(roll) if total == roll]
        found = _SUBSETS[key] = np.array(masks, dtype=np.int64)
    return found


def stuck_value(game: Any, state: int) -> float:
    """``game.stuck_values`` of one box state in plain Python (the numpy version loops over
    the tiles with arrays of one element: 0.1 ms, a third of a lookup). The tests check it
    against the game's on every state of a box."""
    r = game.r
    tiles = _bits(state)
    if r.scoring == "sum":
        score = sum(tiles)
    else:  # digital: the open tiles read as a number, smallest first
        score = 0
        for t in tiles:
            score = score * 10 + t
    if r.objective == "shut":
        return float(score == 0)
    if r.objective == "target":
        return float(score <= r.target)
    return float(score)


def _bits(mask: int) -> list[int]:
    """The tiles of a bitmask, increasing (:meth:`TileCodec.tiles` without scanning every
    tile: a move holds a few low ones)."""
    out, tile = [], 1
    while mask:
        if mask & 1:
            out.append(tile)
        mask >>= 1
        tile += 1
    return out


_ALL_SUBSETS: dict[tuple[str, tuple[int, ...]], tuple[np.ndarray, np.ndarray]] = {}


def _all_subsets(name: str, game: Any, rolls: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Every roll's tile sets (:func:`_subsets`) end to end, and the roll of each, rolls in
    increasing order."""
    key = (name, rolls)
    found = _ALL_SUBSETS.get(key)
    if found is None:
        parts = [_subsets(name, game, r) for r in rolls]
        found = (
            np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64),
            np.repeat(np.array(rolls, dtype=np.int64), [p.size for p in parts]),
        )
        _ALL_SUBSETS[key] = found
    return found


def read_arrays(
    path: Path, name: str, with_dice: bool, first: list[dict[str, Any]], alone: bool
) -> Arrays:
    """``value`` (and ``dice``) of every state of ``name`` in ``path`` by state id, read a row
    group at a time (the file holds this variant alone, in the solver's order); ``first``: its
    first row's objective and maximise; ``alone``: the file holds this variant only (then its
    variant column, a string a row, is not read)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        # one thread, no pre-buffering: the threaded reader leaves ~25 MB per row group in
        # its allocator's arenas (measured: 520 MB peak for the 24-tile box, 216 MB this way)
        f = pq.ParquetFile(path, pre_buffer=False)
        n = f.metadata.num_rows
        value = np.full(n, np.nan)
        dice = np.zeros(n, dtype=np.int8) if with_dice else None
        columns = ["state_id", "value"] + (["dice"] if with_dice else [])
        for k in range(f.metadata.num_row_groups):
            t = f.read_row_group(
                k, columns=columns if alone else ["variant", *columns], use_threads=False
            )
            if not alone:
                t = t.filter(pc.equal(t["variant"], name))
            ids = t["state_id"].to_numpy()
            if ids.size and (ids.min() < 0 or ids.max() >= n):
                raise TableError(f"{path}: state ids beyond its {n:,} rows; rebuild it")
            value[ids] = t["value"].to_numpy(zero_copy_only=False)
            if dice is not None:
                dice[ids] = t["dice"].fill_null(0).to_numpy(zero_copy_only=False)
            del t, ids
            pa.default_memory_pool().release_unused()
    except (OSError, ValueError, KeyError, IndexError) as exc:
        first_line = (str(exc).splitlines() or ["unreadable"])[0]
        raise TableError(f"{path} is not a readable table ({first_line}); rebuild it") from None
    finally:
        with contextlib.suppress(Exception):
            pa.default_memory_pool().release_unused()  # give the row groups' memory back
    if np.isnan(value).any():
        raise TableError(f"{path}: some states of {name} have no value; rebuild it")
    meta = first[0] if first else {"objective": "score", "maximise": False}
    return Arrays(value, dice, bool(meta["maximise"]), str(meta["objective"]))
