"""Turning what a kernel library raises into the exec protocol's answer.

A kernel that checks its own contract (handshake key checks_contract=1) rejects an invalid call by
raising, with the library's own wording. A RejectionTable names the contract rule (a kda::Rule name,
reference/include/kda/profile.hpp) each known message stands for: an ordered list of
(regular expression, rule), matched with re.search against "TypeName: message", the first match
winning. answer_for() gives the line to answer:

    rejected <rule> <TypeName: message>   the exception is in the table
    error <TypeName: message>             it is not: kda-oracle reports the case with this message

Usage:

    TABLE = RejectionTable([
        (r"ValueError: The batch size is expected to be 1", "varlen_batch_one"),
        (r"AssertionError", "v_shape"),          # a bare assert, placed after the worded ones
    ])
    try:
        run(case)
        reply("ok")
    except Exception as e:
        reply(answer_for(e, TABLE))
"""
import re

RULE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")  # a kda::Rule name: softplus_needs_A_log


def one_line(text):
    """text with every run of whitespace (newlines included) made one space: a protocol line."""
    return " ".join(str(text).split())


def describe(exception):
    """'TypeName: message' on one line ('TypeName' alone for an exception without a message)."""
    message = one_line(exception)
    return f"{type(exception).__name__}: {message}" if message else type(exception).__name__


class RejectionTable:
    """An ordered table of (pattern, rule): the first pattern found in describe(exception) names its rule."""

    def __init__(self, rows):
        self.rows = []
        for pattern, rule in rows:
            if not RULE_NAME.fullmatch(rule):
                raise ValueError(f"rejection table: {rule!r} is not a rule name (one word of letters, digits and _)")
            self.rows.append((re.compile(pattern), rule))

    def rule_for(self, exception):
        """The rule the exception stands for, or None when no row matches."""
        text = describe(exception)
        for pattern, rule in self.rows:
            if pattern.search(text):
                return rule
        return None


def answer_for(exception, table):
    """The protocol line for a raised exception: 'rejected <rule> <description>' or 'error <description>'."""
    rule = table.rule_for(exception)
    return f"rejected {rule} {describe(exception)}" if rule else f"error {describe(exception)}"
