"""The bus: bounded, ordered, thread-safe (both runtimes)."""
from mimi import bus, seam

RUNTIMES = ("cpython", "micropython")


def test_queue_is_fifo_and_bounded():
    q = bus.Queue(2)
    assert q.put("a") and q.put("b")
    assert not q.put("c")  # full: refused, not dropped silently
    assert len(q) == 2
    assert q.get() == "a" and q.get() == "b"
    assert q.get(0) is None


def test_get_waits_for_an_item_from_another_thread():
    q = bus.Queue(4)

    def later():
        seam.sleep_ms(30)
        q.put("x")

    seam.start_thread(later, ())
    t0 = seam.ticks_ms()
    assert q.get(2000) == "x"
    assert seam.ticks_diff(seam.ticks_ms(), t0) < 2000


def test_get_times_out():
    q = bus.Queue(1)
    t0 = seam.ticks_ms()
    assert q.get(50) is None
    assert seam.ticks_diff(seam.ticks_ms(), t0) >= 40


def test_send_waits_for_room_but_typing_does_not():
    b = bus.Bus(2, 1)
    assert b.send("telegram", 5, "hi")
    assert not b.send("telegram", 5, "", kind="typing")
    assert not b.send("telegram", 5, "second", timeout_ms=30)
    m = b.outbound.get()
    assert m == {"channel": "telegram", "chat_id": "5", "text": "hi", "kind": "text"}


def test_many_producers_keep_each_chats_order():
    q = bus.Queue(1000)
    done = []

    def produce(chat):
        for i in range(50):
            while not q.put((chat, i)):
                seam.sleep_ms(1)
        done.append(chat)

    for c in range(3):
        seam.start_thread(produce, (c,))
    for _ in range(500):
        if len(done) == 3:
            break
        seam.sleep_ms(5)
    seen = {0: [], 1: [], 2: []}
    while True:
        item = q.get()
        if item is None:
            break
        seen[item[0]].append(item[1])
    for c in seen:
        assert seen[c] == list(range(50))
