"""Unit tests of adapters/python/kda_adapter/rejections.py (CTest adapters.python_rejections)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "adapters", "python"))
from kda_adapter.rejections import RejectionTable, answer_for, describe  # noqa: E402

TABLE = RejectionTable([
    (r"^ValueError: The batch size is expected to be 1", "varlen_batch_one"),
    (r"`chunk_size` must be either 32 or 64", "chunk_size"),
    (r"^AssertionError", "v_shape"),
])


class AnswerFor(unittest.TestCase):
    def test_a_mapped_exception_is_a_rejection_with_its_rule_and_message(self):
        e = ValueError("The batch size is expected to be 1 rather than 2 when using `cu_seqlens`.")
        self.assertEqual(answer_for(e, TABLE), "rejected varlen_batch_one ValueError: The batch size is expected to be 1 "
                                               "rather than 2 when using `cu_seqlens`.")

    def test_the_first_matching_row_wins(self):
        e = AssertionError("`chunk_size` must be either 32 or 64 for KDA, got 16.")
        self.assertTrue(answer_for(e, TABLE).startswith("rejected chunk_size "))

    def test_the_type_name_is_matched_too(self):
        self.assertEqual(answer_for(AssertionError(), TABLE), "rejected v_shape AssertionError")
        self.assertTrue(answer_for(RuntimeError("The batch size is expected to be 1"), TABLE).startswith("error "))

    def test_an_unmapped_exception_is_an_error_line_with_type_and_message(self):
        self.assertEqual(answer_for(KeyError("A_log"), TABLE), "error KeyError: 'A_log'")

    def test_the_answer_is_one_line(self):
        answer = answer_for(ValueError("The batch size is expected to be 1\n  rather\tthan 2"), TABLE)
        self.assertNotIn("\n", answer)
        self.assertIn("expected to be 1 rather than 2", answer)

    def test_describe_without_a_message_is_the_type_name(self):
        self.assertEqual(describe(IndexError()), "IndexError")


class Table(unittest.TestCase):
    def test_a_rule_must_be_a_rule_name(self):
        RejectionTable([(r"x", "softplus_needs_A_log")])  # rule names hold capitals too
        with self.assertRaises(ValueError):
            RejectionTable([(r"x", "not a rule")])
        with self.assertRaises(ValueError):
            RejectionTable([(r"x", "")])

    def test_no_row_matches_gives_none(self):
        self.assertIsNone(TABLE.rule_for(TypeError("unexpected keyword")))


if __name__ == "__main__":
    unittest.main()
