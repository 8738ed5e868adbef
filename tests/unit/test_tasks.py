"""Task collection as Locust does it (@task weights, `tasks` lists and dicts, inheritance), tags with
-T/-E, and the order TaskSets pick their tasks in."""

from squall.user.task import (
    DefaultTaskSet,
    SequentialTaskSet,
    TaskSet,
    _collect_tasks,
    filter_tasks_by_tags,
    tag,
    task,
)
from squall.user.users import HttpUser, User


def names(tasks):
    return [t.__name__ for t in tasks]


def test_task_decorator_bare_and_weighted():
    @task
    def a(user):
        pass

    @task(4)
    def b(user):
        pass

    assert (a.locust_task_weight, b.locust_task_weight) == (1, 4)


def test_task_methods_are_repeated_by_weight():
    class U(User):
        @task(3)
        def heavy(self):
            pass

        @task
        def light(self):
            pass

        def not_a_task(self):
            pass

    assert names(U.tasks) == ["heavy", "heavy", "heavy", "light"]


def test_collect_tasks_order_bases_then_declared_then_methods():
    def f(holder):
        pass

    def g(holder):
        pass

    class Base:
        tasks = [g]  # already weighted, as the metaclass leaves it

    class Plain(Base):
        tasks = {f: 2}

        @task(2)
        def method(self):
            pass

    assert names(_collect_tasks(Plain)) == ["g", "f", "f", "method", "method"]


def test_tasks_as_a_list_with_counts_and_as_a_dict():
    def f(user):
        pass

    def g(user):
        pass

    class Listed(User):
        tasks = [f, (g, 2)]

    class Weighted(User):
        tasks = {f: 1, g: 3}

    assert names(Listed.tasks) == ["f", "g", "g"]
    assert names(Weighted.tasks) == ["f", "g", "g", "g"]


def test_subclasses_add_to_their_bases_tasks():
    class Base(User):
        abstract = True

        @task(2)
        def base_task(self):
            pass

    class Child(Base):
        @task
        def child_task(self):
            pass

    assert names(Child.tasks) == ["base_task", "base_task", "child_task"]
    assert names(Base.tasks) == ["base_task", "base_task"]


def test_abstract_is_false_unless_the_class_says_so():
    class Declared(User):
        abstract = True

    class Concrete(Declared):
        pass

    assert (User.abstract, HttpUser.abstract, Declared.abstract, Concrete.abstract) == (True, True, True, False)
    assert (TaskSet.abstract, SequentialTaskSet.abstract, DefaultTaskSet.abstract) == (True, True, True)


def test_tags_accumulate():
    @tag("b")
    @tag("a", "c")
    @task
    def t(user):
        pass

    assert t.locust_tag_set == {"a", "b", "c"}
    assert t.locust_task_weight == 1


def tagged_user():
    """A user whose tasks are tagged at several levels (a new class each time: filtering is in place)."""

    class Nested(TaskSet):
        @tag("inner")
        @task
        def inner(self):
            pass

        @task
        def untagged_inner(self):
            pass

    @tag("set")
    class TaggedSet(TaskSet):
        @task
        def in_tagged_set(self):
            pass

        @tag("skip")
        @task
        def skipped_in_set(self):
            pass

    class U(User):
        tasks = [Nested, TaggedSet]

        @tag("a")
        @task(2)
        def a(self):
            pass

        @tag("a", "b")
        @task
        def ab(self):
            pass

        @task
        def plain(self):
            pass

    return U, Nested, TaggedSet


def test_filter_by_include():
    u, nested, tagged_set = tagged_user()
    filter_tasks_by_tags(u, include=["a"])
    assert names(u.tasks) == ["a", "a", "ab"]


def test_filter_by_exclude():
    u, nested, tagged_set = tagged_user()
    filter_tasks_by_tags(u, exclude=["b", "skip"])
    assert names(u.tasks) == ["Nested", "TaggedSet", "a", "a", "plain"]
    assert names(nested.tasks) == ["inner", "untagged_inner"]
    assert names(tagged_set.tasks) == ["in_tagged_set"]


def test_filter_reaches_into_task_sets_and_a_tagged_set_keeps_all_its_tasks():
    u, nested, tagged_set = tagged_user()
    filter_tasks_by_tags(u, include=["inner", "set"], exclude=["skip"])
    assert names(u.tasks) == ["Nested", "TaggedSet"]
    assert names(nested.tasks) == ["inner"]
    assert names(tagged_set.tasks) == ["in_tagged_set"]


def test_a_task_set_left_empty_is_dropped():
    u, nested, tagged_set = tagged_user()
    filter_tasks_by_tags(u, include=["b"])
    assert names(u.tasks) == ["ab"]
    assert nested.tasks == [] and tagged_set.tasks == []


def test_excluding_a_task_set_by_its_tag():
    u, _nested, _tagged_set = tagged_user()
    filter_tasks_by_tags(u, exclude=["set"])
    assert names(u.tasks) == ["Nested", "a", "a", "ab", "plain"]


class FakeUser:
    """What a TaskSet reads of its user when only picking tasks."""

    tasks = ()


def test_sequential_task_set_runs_its_tasks_in_order():
    class Steps(SequentialTaskSet):
        @task
        def first(self):
            pass

        @task(2)
        def second(self):
            pass

        @task
        def third(self):
            pass

    steps = Steps(FakeUser())
    assert [steps.get_next_task().__name__ for _ in range(8)] == [
        "first", "second", "second", "third", "first", "second", "second", "third",
    ]  # fmt: skip


def test_a_nested_task_set_finds_the_user_through_its_parent():
    class Inner(TaskSet):
        pass

    class Outer(TaskSet):
        pass

    user = FakeUser()
    outer = Outer(user)
    inner = Inner(outer)
    assert (outer.user, inner.user, inner.parent) == (user, user, outer)


def test_random_choice_follows_the_weights():
    class U(User):
        @task(9)
        def often(self):
            pass

        @task
        def rarely(self):
            pass

    class Holder:
        tasks = U.tasks

    picker = DefaultTaskSet(Holder())
    picks = [picker.get_next_task().__name__ for _ in range(5000)]
    assert 0.85 < picks.count("often") / len(picks) < 0.95


def test_a_seeded_file_picks_the_tasks_random_choice_picks():
    # Locust picks with random.choice; squall's pick, written out, draws the same from the same generator,
    # for every length (powers of two, where random's _randbelow draws one bit more, included).
    import random

    from squall.user.task import _choice

    for length in (2, 3, 4, 7, 8, 9, 16, 100):
        tasks = list(range(length))
        random.seed(length)
        expected = [random.choice(tasks) for _ in range(500)]
        random.seed(length)
        assert [_choice(tasks) for _ in range(500)] == expected
