"""A Shut the Box game in the terminal that teaches: every choice is ranked by the solved tables.

The game is a loop over decisions. Before a roll, when the rules offer one die or two, the player
chooses how many dice; after the roll, which tiles to shut. Each time the options are shown best
first with what each one loses against the best (in the variant's objective: win probability,
expected score, ...), the player answers by number, and every choice that loses something is
recorded. At the end the game lists those mistakes and their total.

Everything comes from the built tables (``states``, ``policy``, ``moves``): :class:`Coach` reads
them once per game. Input and output go through callables, so tests drive a game with a list of
answers and the CLI with stdin (end of input ends the game cleanly).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from pipeline import tables
from pipeline.errors import UsageError
from pipeline.games.dice import roll_distribution
from pipeline.games.shutbox import ShutTheBox
from pipeline.variants import Variant

#: Values closer than this (relative) are ties, as in the solver.
TIE = 1e-12
OBJECTIVE_TEXT = {
    "shut": ("win probability", True),
    "target": ("probability of reaching the target", True),
    "score": ("expected final score", False),
}


@dataclass(frozen=True)
class Option:
    """One choice the player can make: a number of dice, or a move; ranked by ``value``."""

    label: str
    value: float
    loses: float
    """Value lost against the best option (0 for a best option), in the objective's units."""
    is_best: bool
    next_state: int | None = None
    next_tiles: str | None = None
    dice: int | None = None


@dataclass(frozen=True)
class Mistake:
    """A choice that lost something."""

    turn: int
    tiles: str
    situation: str
    chosen: str
    best: str
    lost: float


@dataclass
class GameRecord:
    """What happened in one game."""

    variant: str
    seed: int
    start_value: float
    mistakes: list[Mistake] = field(default_factory=list)
    rolls: list[int] = field(default_factory=list)
    final_tiles: str | None = None
    final_score: int | None = None
    shut: bool = False
    finished: bool = False

    @property
    def given_away(self) -> float:
        """Sum of the values lost by every mistake."""
        return math.fsum(m.lost for m in self.mistakes)


class Coach:
    """The solved tables of one one-player Shut the Box variant, ready to rank choices."""

    def __init__(self, data_dir: Path, variant: Variant) -> None:
        game = variant.make()
        if not isinstance(game, ShutTheBox):
            raise UsageError(
                f"play supports one-player Shut the Box variants; {variant.name} is not one"
            )
        self.variant, self.game = variant.name, game
        states = tables.read_table(data_dir, "states", variant.name)
        if states["value"].null_count():
            raise UsageError(
                f"variant {variant.name} is not solved: run "
                f"`stb-pipeline build --variant {variant.name}`"
            )
        self.objective = str(states["objective"][0])
        self.maximise = bool(states["maximise"][0])
        self.state = {
            r["state_id"]: r
            for r in states.select(
                "state_id", "tiles", "value", "terminal", "score", "dice"
            ).iter_rows(named=True)
        }
        policy = tables.read_table(data_dir, "policy", variant.name)
        self.node_value = {
            (s, r): v for s, r, v in policy.select("state_id", "roll", "value").iter_rows()
        }
        moves = tables.read_table(data_dir, "moves", variant.name).sort(
            ["state_id", "roll", "regret", "is_best"], descending=[False, False, False, True]
        )
        self.moves: dict[tuple[int, int], list[Option]] = {}
        for row in moves.iter_rows(named=True):
            self.moves.setdefault((row["state_id"], row["roll"]), []).append(
                Option(
                    label=_tiles_label(row["move"]),
                    value=row["value"],
                    loses=row["regret"],
                    is_best=row["is_best"],
                    next_state=row["next_state_id"],
                    next_tiles=row["next_tiles"],
                )
            )

    @property
    def start(self) -> int:
        """The full box."""
        return self.game.start_state()

    def better(self, a: float, b: float) -> bool:
        """Whether value ``a`` beats ``b`` by more than a tie."""
        gap = (a - b) if self.maximise else (b - a)
        return gap > TIE * max(1.0, abs(a), abs(b))

    def dice_options(self, state_id: int) -> list[Option]:
        """How many dice the rules allow here, each with its value; best first."""
        allowed = self.game.dice_available(np.array([state_id], dtype=np.int64))
        options = []
        for dice, ok in sorted(allowed.items(), reverse=True):
            if not ok[0]:
                continue
            value = math.fsum(
                ways / denom * self.node_value[(state_id, total)]
                for total, ways, denom in roll_distribution(dice, self.game.r.sides)
            )
            label = "one die" if dice == 1 else f"{dice} dice"
            options.append(Option(label, value, 0.0, False, dice=dice))
        best_dice = self.state[state_id]["dice"]
        best = next(o for o in options if o.dice == best_dice)
        sign = 1.0 if self.maximise else -1.0
        ranked = [
            Option(
                o.label,
                o.value,
                max(0.0, sign * (best.value - o.value)),
                o.dice == best_dice,
                dice=o.dice,
            )
            for o in options
        ]
        return sorted(ranked, key=lambda o: (not o.is_best, o.loses))

    def move_options(self, state_id: int, roll: int) -> list[Option]:
        """Every legal move after ``roll``, best first (empty when the player is stuck)."""
        return self.moves.get((state_id, roll), [])


Ask = Callable[[str, int], int | None]
"""Asks the player to pick 1..n (prompt, n); returns the number picked, or None to stop."""


def play_game(
    coach: Coach,
    ask: Ask,
    console: Console,
    seed: int | None = None,
    show_values: bool = True,
) -> GameRecord:
    """Play one game: roll with a seeded RNG, rank each choice, record the mistakes."""
    seed = secrets.randbelow(2**31) if seed is None else seed
    rng = np.random.default_rng(seed)
    what, _ = OBJECTIVE_TEXT.get(coach.objective, (coach.objective, coach.maximise))
    state = coach.start
    record = GameRecord(coach.variant, seed, coach.state[state]["value"])
    console.print(
        f"[bold]{coach.variant}[/] ({coach.game.r.tiles} tiles): "
        f"seed {seed} (replay with --seed {seed}). "
        f"Optimal play from here: {what} {_fmt(record.start_value, coach.objective)}."
    )
    turn = 0
    while True:
        info = coach.state[state]
        if info["terminal"]:
            record.final_tiles, record.final_score, record.shut = info["tiles"], 0, True
            record.finished = True
            console.print("[bold green]You shut the box![/]")
            break
        turn += 1
        console.print(f"\n[bold]Turn {turn}[/]: open tiles {_spaced(info['tiles'])}")
        dice = coach.dice_options(state)
        chosen = dice[0]
        if len(dice) > 1:
            pick = _choose(ask, console, dice, "dice", coach.objective, show_values)
            if pick is None:
                break
            chosen = pick
            _judge(record, coach, console, turn, info["tiles"], "before rolling", chosen, dice)
        faces = rng.integers(1, coach.game.r.sides + 1, size=chosen.dice)
        roll = int(faces.sum())
        record.rolls.append(roll)
        console.print(f"You roll {' + '.join(str(int(f)) for f in faces)} = [bold]{roll}[/]")
        moves = coach.move_options(state, roll)
        if not moves:
            record.final_tiles, record.final_score = info["tiles"], int(info["score"])
            record.finished = True
            console.print(f"No move shuts tiles adding to {roll}: the game ends.")
            break
        move = _choose(ask, console, moves, "shut", coach.objective, show_values)
        if move is None:
            break
        _judge(record, coach, console, turn, info["tiles"], f"roll {roll}", move, moves)
        assert move.next_state is not None
        state = move.next_state
    _summary(record, coach, console)
    return record


def _choose(
    ask: Ask, console: Console, ranked: list[Option], kind: str, objective: str, show_values: bool
) -> Option | None:
    """Show the options and take the player's pick (None: stop).

    With values shown the options are ranked best first; in a quiz they are listed in a neutral
    order (fewest dice, lowest tiles first) and the ranking is shown after the pick.
    """
    shown = ranked if show_values else sorted(ranked, key=_neutral_order)
    console.print(_options_table(shown, kind, objective, show_values))
    question = "How many dice?" if kind == "dice" else "Which move?"
    pick = ask(f"{question} (1-{len(shown)})", len(shown))
    if pick is None:
        return None
    if not show_values:
        console.print(_options_table(ranked, kind, objective, True))
    return shown[pick - 1]


def _neutral_order(option: Option) -> tuple[int, list[int]]:
    """Order that gives nothing away: by number of dice, or by the tiles shut."""
    return (option.dice or 0, [int(t) for t in option.label.split() if t.isdigit()])


def _judge(
    record: GameRecord,
    coach: Coach,
    console: Console,
    turn: int,
    tiles: str,
    situation: str,
    chosen: Option,
    options: list[Option],
) -> None:
    """Tell the player how good the choice was, and record it when it lost something."""
    best = options[0]
    if chosen.loses <= TIE * max(1.0, abs(best.value)):
        console.print(f"[green]{chosen.label}: a best choice.[/]")
        return
    record.mistakes.append(Mistake(turn, tiles, situation, chosen.label, best.label, chosen.loses))
    console.print(
        f"[yellow]{chosen.label} loses {_fmt_loss(chosen.loses, coach.objective, False)}; "
        f"best was {best.label}.[/]"
    )


def _summary(record: GameRecord, coach: Coach, console: Console) -> None:
    """The end of the game: the outcome and every mistake."""
    what, _ = OBJECTIVE_TEXT.get(coach.objective, (coach.objective, coach.maximise))
    if not record.finished:
        console.print("\nGame stopped before the end.")
    elif not record.shut:
        console.print(
            f"\nFinal tiles {_spaced(record.final_tiles or '')}: score {record.final_score}."
        )
    if not record.mistakes:
        console.print(f"No mistakes: you gave away no {what}.")
        return
    table = Table(title="Your mistakes", title_justify="left")
    for col in ("turn", "tiles", "when", "you chose", "best", "lost"):
        table.add_column(col, justify="right" if col in ("turn", "lost") else "left")
    for m in record.mistakes:
        table.add_row(
            str(m.turn), m.tiles, m.situation, m.chosen, m.best, _fmt_loss(m.lost, coach.objective)
        )
    console.print(table)
    lost = _fmt_loss(record.given_away, coach.objective, short=False)
    start = _fmt(record.start_value, coach.objective)
    if coach.maximise:
        text = f"In all you gave away {lost} of {what}"
    else:
        text = f"In all your choices added {lost} to your {what}"
    console.print(f"{text} (optimal play from the start: {start}).")


def _options_table(options: list[Option], kind: str, objective: str, show_values: bool) -> Table:
    """The numbered options, best first, with what each one loses."""
    table = Table("#", kind, *(("value", "loses") if show_values else ()))
    for i, o in enumerate(options, 1):
        label = o.label if kind == "dice" else f"{o.label}  (leaves {_spaced(o.next_tiles or '')})"
        cells = [_fmt(o.value, objective), _fmt_loss(o.loses, objective)] if show_values else []
        table.add_row(str(i), label, *cells)
    return table


def _tiles_label(move: list[int] | None) -> str:
    return " ".join(str(t) for t in move or [])


def _spaced(tiles: str) -> str:
    return " ".join(tiles.split(",")) if "," in tiles else " ".join(tiles) or "(none)"


def _fmt(value: float, objective: str) -> str:
    return f"{value:.4%}" if objective in ("shut", "target") else f"{value:.4f}"


def _fmt_loss(value: float, objective: str, short: bool = True) -> str:
    """A loss: probabilities in percentage points ("pp" in tables), other values as they are."""
    if objective in ("shut", "target"):
        unit = "pp" if short else "percentage points"
        return f"{value * 100:.4f} {unit}" if value else "-"
    return f"{value:.4f}" if value else "-"


def line_asker(read_line: Callable[[], str], console: Console, echo: bool) -> Ask:
    """An :data:`Ask` reading one answer per line; ``q`` or end of input stops the game.

    ``read_line`` returns "" at end of input (as ``sys.stdin.readline`` does); with ``echo`` the
    answer is printed after the prompt, so that a transcript of piped input reads well.
    """

    def ask(prompt: str, n: int) -> int | None:
        while True:
            console.print(f"{prompt} ", end="")
            line = read_line()
            if not line:
                console.print("\n(end of input)")
                return None
            text = line.strip().lower()
            if echo:
                console.print(text)
            if text in ("q", "quit"):
                return None
            if text.isdigit() and 1 <= int(text) <= n:
                return int(text)
            console.print(f"Type a number from 1 to {n} (q quits).")

    return ask
