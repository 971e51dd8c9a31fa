# Unit tests of how logbook's callback removes repeats from a task's warnings,
# deprecations and exceptions (the end-to-end test with real Ansible is
# test/e2e/e2e_task_messages.test.ts). Run: python3 -m unittest discover -s test/python
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "src", "ansible", "callback"))
import logbook  # noqa: E402


class TaskMessagesTest(unittest.TestCase):
    def test_repeats_go_and_the_first_occurrence_keeps_its_place(self):
        self.assertEqual(logbook.unique(["b", "a", "b", "c", "a"], logbook.json_key), ["b", "a", "c"])

    def test_values_that_cannot_be_hashed_are_compared_as_json(self):
        items = [{"x": [1]}, "x", {"x": [1]}, ["x"], "x"]
        self.assertEqual(logbook.unique(items, logbook.json_key), [{"x": [1]}, "x", ["x"]])

    def test_a_deprecation_is_the_same_when_collection_msg_and_version_are(self):
        a = {"msg": "old", "version": "2.24", "collection_name": "ansible.builtin"}
        same_but_more = dict(a, deprecator={"resolved_name": "ansible.builtin"})
        other_version = dict(a, version="2.25")
        dated = {"msg": "old", "date": "2030-01-01", "collection_name": "ansible.builtin"}
        got = logbook.unique([a, same_but_more, other_version, dated, "not a dict", "not a dict"], logbook.deprecation_key)
        self.assertEqual(got, [a, other_version, dated, "not a dict"])

    def test_a_single_value_is_a_list_of_one(self):
        self.assertEqual(logbook.as_list(None), [])
        self.assertEqual(logbook.as_list("one warning"), ["one warning"])
        self.assertEqual(logbook.as_list(("a", "b")), ["a", "b"])


if __name__ == "__main__":
    unittest.main()
