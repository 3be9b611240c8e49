"""A Shut the Box game in the terminal that teaches: every choice is ranked by the solved tables.

The game is a loop over decisions. Before a roll, when the rules offer one die or two, the player
chooses how many dice; after the roll, which tiles to shut. Each time the options are shown best
first with what each one loses against the best (in the variant's objective: win probability,
expected score, ...), the player answers by number, and every choice that loses something is
recorded. At the end the game lists those mistakes and their total.

Every value comes from the library's one answer (:mod:`pipeline.answer`): :class:`Coach` asks
it about each position as the game reaches it, so the game starts at once and nothing is ranked
that is never shown. Input and output go through callables, so tests drive a game with a list of
answers and the CLI with stdin (end of input ends the game cleanly).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from pipeline.answer.answers import Answers, for_dir
from pipeline.answer.model import Answer
from pipeline.apps.seats import check_seat
from pipeline.errors import UsageError
from pipeline.games.registry import Variant

#: Objectives whose values are probabilities (shown in %, losses in percentage points).
PROBABILITIES = ("shut", "target", "wins")
#: What a value means, by objective, for the player.
OBJECTIVE_TEXT = {
    "shut": "win probability",
    "wins": "expected wins",
    "target": "probability of reaching the target",
    "score": "expected final score",
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
    tied: bool = False
    """Whether it ties with the best under the library's tie rule (a best choice)."""


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
    finished: bool = False
    outcome: str = ""

    @property
    def given_away(self) -> float:
        """Sum of the values lost by every mistake."""
        return math.fsum(m.lost for m in self.mistakes)


class Coach:
    """The answers about one Shut the Box variant, as the game asks them.

    One-player variants and the games of N players in turn (the two-player course game too: its
    states carry ``p1_score``, ids ``p1_score * 2**tiles + mask``, and values are the mover's
    expected wins). Nothing is read when the coach is made: each position is asked of the
    library (:class:`pipeline.answer.answers.Answers`) when the game reaches it, so a game
    starts at once and a bad argument is refused before any table is read.
    """

    def __init__(self, data_dir: Path, variant: Variant, answers: Answers | None = None) -> None:
        """UsageError when the variant is not a Shut the Box game (its tables are read later)."""
        game = variant.make()
        # its one-player rules (itself, or the N-player game's ``base``): a game drawn as one row
        # of tiles (its family says so, :attr:`Variant.view`)
        self.box: Any = getattr(game, "base", game)
        if variant.view != "tiles" or not hasattr(self.box, "r"):
            raise UsageError(f"play supports Shut the Box variants; {variant.name} is not one")
        self.variant, self.game, self._variant = variant.name, game, variant
        self.answers = answers if answers is not None else for_dir(data_dir)
        self.n_masks = 1 << self.box.r.tiles
        #: Players in turn (1 for the one-player games).
        self.players = variant.players
        #: The two-player course game (sum scoring, ids by player 1's score): its own wording.
        self.two_player = self.players == 2 and self.box.r.scoring == "sum"

    @property
    def start(self) -> int:
        """The full box (player 1's, in the games of several players)."""
        return self.game.start_state()

    def answer(self, state_id: int, roll: int | None = None) -> Answer:
        """The library's answer for a state (and a roll)."""
        return self.answers.position(self._variant, state_id=state_id, roll=roll)

    @cached_property
    def objective(self) -> str:
        return self.answers.expect(self._variant, state_id=self.start).objective

    @cached_property
    def maximise(self) -> bool:
        return self.answers.expect(self._variant, state_id=self.start).maximise

    @cached_property
    def start_shares(self) -> dict[int, float]:
        """Each seat's expected payoff at the start (players in turn; empty otherwise)."""
        shares = self.answers.expect(self._variant, state_id=self.start).shares
        return {
            s.seat: float(s.share) for s in shares if s.seat is not None and s.share is not None
        }

    @lru_cache(maxsize=4096)  # noqa: B019  (the coach lives as long as its game)
    def info(self, state_id: int) -> dict[str, Any]:
        """What the game shows of a state: tiles, value, terminal, score, open_sum, dice, player,
        p1_score, best_score, best_count."""
        state = self.answers.expect(self._variant, state_id=state_id)
        mask = np.array([state_id % self.n_masks], dtype=np.int64)
        best = state.fields.get("best_score")
        return {
            "state_id": state_id,
            "tiles": state.tiles,
            "value": state.value,
            "terminal": state.terminal,
            "score": self.box.final_score(int(mask[0])),
            "open_sum": int(self.box.open_sums(mask)[0]),
            "dice": state.dice,
            "player": state.fields.get("player") or 1,
            "p1_score": best if self.two_player else None,
            "best_score": best,
            "best_count": state.fields.get("best_count"),
        }

    def after_stuck(self, state_id: int) -> int | None:
        """Where play goes when the mover is stuck: the next player's start, or None (the game
        ends)."""
        next_start = getattr(self.game, "next_start", None)
        return None if next_start is None else next_start(state_id)

    def dice_options(self, state_id: int) -> list[Option]:
        """How many dice the rules allow here, each with its value; best first."""
        return [
            Option("one die" if o.dice == 1 else f"{o.dice} dice", o.value, o.regret, o.best,
                   dice=o.dice, tied=o.tied)
            for o in self.answer(state_id).dice
        ]  # fmt: skip

    def move_options(self, state_id: int, roll: int) -> list[Option]:
        """Every legal move after ``roll``, best first (empty when the player is stuck)."""
        return [
            Option(
                " ".join(str(t) for t in m.move or []),
                m.value,
                m.regret,
                m.best,
                m.next_id,
                m.next_tiles,
                tied=m.tied,
            )
            for m in self.answer(state_id, roll).moves
        ]


Ask = Callable[[str, int], int | None]
"""Asks the player to pick 1..n (prompt, n); returns the number picked, or None to stop."""
Advise = Callable[[int, int | None], str | None]
"""A line of advice for the player's choice at (state id, roll; None before the roll), or None
(``play --rule``: :meth:`pipeline.apps.rule_coach.RuleCoach.advice`)."""


def play_game(
    coach: Coach,
    ask: Ask,
    console: Console,
    seed: int | None = None,
    show_values: bool = True,
    seat: int = 1,
    advise: Advise | None = None,
) -> GameRecord:
    """Play one game: roll with a seeded RNG, rank each choice, record the mistakes.

    In a game of N players in turn the player takes seat 1..N and the solver plays every other
    seat (optimally, by the tables); only the player's own choices are judged. Seat 0 watches
    the solver play every seat.
    """
    check_seat(coach.variant, coach.players, seat)
    seed = secrets.randbelow(2**31) if seed is None else seed
    if not 0 <= seed < 2**63:
        raise UsageError(f"--seed must be between 0 and {2**63 - 1}, not {seed}")
    rng = np.random.default_rng(seed)
    session = _Session(coach, ask, console, rng, seat, show_values, advise=advise)
    record = session.open(seed)
    state: int | None = coach.start
    turn = 0
    while state is not None:
        info = coach.info(state)
        if info["terminal"]:
            session.finish(record, info, stuck=False)
            break
        turn += 1
        state = session.play_turn(record, state, info, turn)
    _summary(record, coach, console)
    return record


@dataclass(frozen=True)
class _Session:
    """One game in progress: the tables, the player's seat and answers, and the seeded dice."""

    coach: Coach
    ask: Ask
    console: Console
    rng: np.random.Generator
    seat: int
    show_values: bool
    #: Each player's final score once their turn has ended (players in turn).
    scores: dict[int, int] = field(default_factory=dict)
    advise: Advise | None = None

    def coach_line(self, state: int, roll: int | None) -> None:
        """The advice for the player's choice, when a rule coaches (``play --rule``)."""
        line = self.advise(state, roll) if self.advise is not None else None
        if line:
            self.console.print(f"[cyan]{line}[/]")

    def open(self, seed: int) -> GameRecord:
        """A new record, announced with the seed and the value of optimal play from the start."""
        coach = self.coach
        what = OBJECTIVE_TEXT.get(coach.objective, coach.objective)
        start_value = coach.info(coach.start)["value"]
        if self.seat > 1 and coach.players == 2 and coach.objective == "wins":
            # The mover's values: player 2's expected wins at the start are 1 minus player 1's.
            start_value = 1.0 - start_value
        elif self.seat > 1:
            start_value = coach.start_shares[self.seat]
        record = GameRecord(coach.variant, seed, start_value)
        players = ""
        if coach.players == 2 and self.seat:
            players = f" (you are player {self.seat}, the solver the other)"
        elif coach.players > 2 and self.seat:
            players = f" (you are player {self.seat} of {coach.players}, the solver the others)"
        elif self.seat == 0:
            players = f" (the solver plays all {coach.players} players; you watch)"
        self.console.print(
            f"[bold]{coach.variant}[/] ({coach.box.r.tiles} tiles){players}: "
            f"seed {seed} (replay with --seed {seed}). "
            f"Optimal play from here: your {what} {_fmt(record.start_value, coach.objective)}."
        )
        return record

    def play_turn(
        self, record: GameRecord, state: int, info: dict[str, Any], turn: int
    ) -> int | None:
        """One roll from ``state``: dice, roll, move. The next state; None when play stops."""
        human = info["player"] == self.seat
        self.console.print(_turn_header(self.coach, info, turn, human))
        dice = self.pick_dice(record, state, info, turn, human)
        if dice is None:
            return None
        roll = self.roll(record, dice.dice, human)
        moves = self.coach.move_options(state, roll)
        if not moves:
            return self.stuck(record, state, info, roll)
        move = self.pick_move(record, info, turn, roll, moves, human)
        return None if move is None else move.next_state  # (a move's next state is never None)

    def pick_dice(
        self, record: GameRecord, state: int, info: dict[str, Any], turn: int, human: bool
    ) -> Option | None:
        """How many dice to roll: the player's pick (judged), or the best; None to stop."""
        options = self.coach.dice_options(state)
        if len(options) > 1 and human:
            self.coach_line(state, None)
            picked = self.choose(options, "dice")
            if picked is not None:
                self.judge(record, turn, info["tiles"], "before rolling", picked, options)
            return picked
        if len(options) > 1:
            self.console.print(f"The solver rolls {options[0].label}.")
        return options[0]

    def roll(self, record: GameRecord, dice: int | None, human: bool) -> int:
        """Roll ``dice`` dice, show the faces and record the total."""
        faces = self.rng.integers(1, self.coach.box.r.sides + 1, size=dice)
        roll = int(faces.sum())
        record.rolls.append(roll)
        who = "You roll" if human else "The solver rolls"
        self.console.print(f"{who} {' + '.join(str(int(f)) for f in faces)} = [bold]{roll}[/]")
        return roll

    def stuck(self, record: GameRecord, state: int, info: dict[str, Any], roll: int) -> int | None:
        """No move after ``roll``: the next player's start in a game of players in turn, else
        the end."""
        after = self.coach.after_stuck(state)
        self.scores[int(info["player"])] = int(info["score"])
        if after is None:
            self.finish(record, info, stuck=True, roll=roll)
            return None
        best = self.coach.info(after)["best_score"]
        self.console.print(
            f"No move shuts tiles adding to {roll}: player {info['player']} ends with "
            f"{info['score']}. Player {int(info['player']) + 1} must finish below {best} to win."
        )
        return after

    def pick_move(
        self,
        record: GameRecord,
        info: dict[str, Any],
        turn: int,
        roll: int,
        moves: list[Option],
        human: bool,
    ) -> Option | None:
        """The move after ``roll``: the player's pick (judged), or the best; None to stop."""
        if not human:
            self.console.print(f"The solver shuts {moves[0].label}.")
            return moves[0]
        self.coach_line(info["state_id"], roll)
        move = self.choose(moves, "shut")
        if move is not None:
            self.judge(record, turn, info["tiles"], f"roll {roll}", move, moves)
        return move

    def finish(self, record: GameRecord, info: dict[str, Any], stuck: bool, roll: int = 0) -> None:
        """Record and announce the end: a shut box (or a win), or the mover stuck after ``roll``."""
        record.finished = True
        record.final_tiles = info["tiles"]
        record.outcome = _outcome(self.coach, info, self.seat, stuck=stuck, scores=self.scores)
        if stuck:
            self.console.print(f"No move shuts tiles adding to {roll}: the game ends.")
        self.console.print(f"[bold]{record.outcome}[/]")

    def choose(self, ranked: list[Option], kind: str) -> Option | None:
        """Show the options and take the player's pick (None: stop).

        With values shown the options are ranked best first; in a quiz they are listed in a
        neutral order (fewest dice, lowest tiles first) and the ranking is shown after the pick.
        """
        objective, console = self.coach.objective, self.console
        shown = ranked if self.show_values else sorted(ranked, key=_neutral_order)
        console.print(_options_table(shown, kind, objective, self.show_values))
        question = "How many dice?" if kind == "dice" else "Which move?"
        pick = self.ask(f"{question} (1-{len(shown)})", len(shown))
        if pick is None:
            return None
        if not self.show_values:
            console.print(_options_table(ranked, kind, objective, True))
        return shown[pick - 1]

    def judge(
        self,
        record: GameRecord,
        turn: int,
        tiles: str,
        situation: str,
        chosen: Option,
        options: list[Option],
    ) -> None:
        """Tell the player how good the choice was; record it when it lost something."""
        best = options[0]
        if chosen.tied:  # the library's tie rule says so
            self.console.print(f"[green]{chosen.label}: a best choice.[/]")
            return
        lost = chosen.loses
        record.mistakes.append(Mistake(turn, tiles, situation, chosen.label, best.label, lost))
        self.console.print(
            f"[yellow]{chosen.label} loses {_fmt_loss(lost, self.coach.objective, False)}; "
            f"best was {best.label}.[/]"
        )


def _turn_header(coach: Coach, info: dict[str, Any], turn: int, human: bool) -> str:
    """The line that opens a roll: whose it is and what is open."""
    tiles = _spaced(info["tiles"])
    if coach.players == 1:
        return f"\n[bold]Turn {turn}[/]: open tiles {tiles}"
    who = "you" if human else "the solver"
    best = info["best_score"] if info["best_score"] is not None else info["p1_score"]
    target = "" if best is None else f", to beat {best}"
    if (info["best_count"] or 1) > 1:
        target += f" (held by {info['best_count']} players)"
    return f"\n[bold]Roll {turn}[/] (player {info['player']}, {who}{target}): open tiles {tiles}"


def _outcome(
    coach: Coach, info: dict[str, Any], seat: int, stuck: bool, scores: dict[int, int]
) -> str:
    """How the game ended, from the player's side."""
    if coach.players > 2 or (coach.players == 2 and not coach.two_player):
        # players in turn (the two-player course game keeps its own wording, by p1_score)
        return _outcome_in_turn(info, seat, stuck, scores)
    if not coach.two_player:
        if not stuck:
            return "You shut the box!"
        return f"Final tiles {_spaced(info['tiles'])}: score {info['score']}."
    if not stuck:
        # A terminal player-1 state is P1's shut box; a terminal player-2 state is P2 below P1.
        winner = 1 if info["player"] == 1 else 2
        how = "shuts the box" if winner == 1 else f"gets below {info['p1_score']}"
    else:
        if info["open_sum"] == info["p1_score"]:
            return f"Player 2 ends on {info['open_sum']}, the same as player 1: a tie."
        winner, how = 1, f"wins: player 2 ends on {info['open_sum']}, above {info['p1_score']}"
    you = "you win" if winner == seat else "the solver wins"
    return f"Player {winner} {how}: {you}."


def _outcome_in_turn(info: dict[str, Any], seat: int, stuck: bool, scores: dict[int, int]) -> str:
    """How a game of players in turn ended: a shut box, the last player already below the best
    score, or the lowest score after every turn (a tie splits the win)."""
    mover = int(info["player"])
    if not stuck:
        how = "shuts the box" if not info["tiles"] else f"gets below {info['best_score']}"
        you = "you win" if mover == seat else "the solver wins" if seat else "the game is over"
        return f"Player {mover} {how}: {you}."
    low = min(scores.values())
    winners = sorted(k for k, v in scores.items() if v == low)
    names = " and ".join(f"player {k}" for k in winners)
    listing = ", ".join(f"player {k} {v}" for k, v in sorted(scores.items()))
    if len(winners) > 1:
        mine = "; you share it" if seat in winners else ""
        return f"Scores: {listing}. P{names[1:]} tie on {low} and share the win{mine}."
    you = "you win" if seat in winners else "the solver wins" if seat else "the game is over"
    return f"Scores: {listing}. P{names[1:]} wins on {low}: {you}."


def _neutral_order(option: Option) -> tuple[int, list[int]]:
    """Order that gives nothing away: by number of dice, or by the tiles shut."""
    return (option.dice or 0, [int(t) for t in option.label.split() if t.isdigit()])


def _summary(record: GameRecord, coach: Coach, console: Console) -> None:
    """The end of the game: the outcome and every mistake."""
    what = OBJECTIVE_TEXT.get(coach.objective, coach.objective)
    if not record.finished:
        console.print("\nGame stopped before the end.")
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


def _spaced(tiles: str) -> str:
    return " ".join(tiles.split(",")) if "," in tiles else " ".join(tiles) or "nothing"


def _fmt(value: float, objective: str) -> str:
    return f"{value:.4%}" if objective in PROBABILITIES else f"{value:.4f}"


def _fmt_loss(value: float, objective: str, short: bool = True) -> str:
    """A loss: probabilities in percentage points ("pp" in tables), other values as they are."""
    if objective in PROBABILITIES:
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
            # ascii digits, few of them: "²" is a digit to isdigit(), and a number of thousands
            # of digits is beyond int()'s limit
            if text.isascii() and text.isdigit() and len(text) < 10 and 1 <= int(text) <= n:
                return int(text)
            console.print(f"Type a number from 1 to {n} (q quits).")

    return ask
