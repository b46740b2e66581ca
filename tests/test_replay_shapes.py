"""normalise.shapes: one normalise per skeleton must give every text the shape normalise
gives it alone, whatever digits it holds and where."""

from __future__ import annotations

import random
import re

from tpsbench.workloads.replay.normalise import normalise, shapes

#: pieces whose digits matter to the shape (names, placeholders, tags, quoted names) or not
PIECES = ["1", "23", "4.5", ".5", "1e5", "1e-7", "-", "a1", "$1", "$$x1$$", "$t1$ 9 $t1$", "'a1'", "E'\\1'", " ",
          "(", ",", "=", '"c1"', "`d2`", "/* 3 */", "-- 4\n", "x", "SELECT", "PASSWORD", "?", "%s", "é3", "_1",
          "+", "IN", "'", '"', "$", "e", ";"]


def test_texts_alike_but_for_their_digits_get_their_own_shapes() -> None:
    texts = ["UPDATE t SET v = v + -2898 WHERE id = 80680;", "UPDATE t SET v = v + 7 WHERE id = 1;",
             'SELECT "c1" FROM t1 WHERE x = 5', 'SELECT "c2" FROM t1 WHERE x = 6', "SELECT a1 FROM t WHERE b = $1",
             "SELECT a2 FROM t WHERE b = $2", "SELECT $f1$ 3 $f1$, 1e-5", "SELECT $f2$ 3 $f2$, 2e-6", "BEGIN;", "END;"]
    assert shapes(texts) == [normalise(t)[0] for t in texts]
    assert shapes(texts)[0] == shapes(texts)[1] == "UPDATE t SET v = v + ? WHERE id = ?"
    assert shapes(texts)[2] != shapes(texts)[3]


def test_random_texts_and_their_digits_changed_shape_as_normalise_does() -> None:
    draw = random.Random(7)
    for _ in range(20000):
        text = "".join(draw.choice(PIECES) for _ in range(draw.randint(1, 12)))
        other = re.sub(r"\d+", lambda m: str(draw.randint(0, 999)) if draw.random() < 0.6 else m.group(), text)
        assert shapes([text, other]) == [normalise(text)[0], normalise(other)[0]], (text, other)
