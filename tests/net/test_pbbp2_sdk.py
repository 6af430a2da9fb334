"""``mimi.net.pbbp2`` against the lark-oapi SDK's own protobuf ``Frame`` (host only):
random frames go both ways byte for byte."""
import random

from lark_oapi.ws.pb.pbbp2_pb2 import Frame

from mimi.net import pbbp2


def _sdk(f):
    g = Frame()
    g.SeqID, g.LogID, g.service, g.method = f["SeqID"], f["LogID"], f["service"], f["method"]
    for k, v in f["headers"]:
        h = g.headers.add()
        h.key, h.value = k, v
    for name in ("payload_encoding", "payload_type", "LogIDNew"):
        if name in f:
            setattr(g, name, f[name])
    if "payload" in f:
        g.payload = f["payload"]
    return g


def test_random_frames_both_ways():
    rnd = random.Random(15)
    for _ in range(300):
        f = {"SeqID": rnd.randrange(1 << 64), "LogID": rnd.randrange(1 << 64),
             "service": rnd.randrange(-(1 << 31), 1 << 31), "method": rnd.choice((0, 1)),
             "headers": [["k%d" % i, "v\u00e9" * rnd.randrange(50)] for i in range(rnd.randrange(6))]}
        if rnd.random() < 0.7:
            f["payload"] = bytes(rnd.randrange(256) for _ in range(rnd.randrange(400)))
        if rnd.random() < 0.3:
            f["LogIDNew"] = "id%d" % rnd.randrange(1000)
        if rnd.random() < 0.3:
            f["payload_type"] = "json"
        ours = bytes(pbbp2.encode(f))
        assert ours == _sdk(f).SerializeToString()
        back = Frame()
        back.ParseFromString(ours)
        d = pbbp2.decode(back.SerializeToString())
        if "payload" in d:
            d["payload"] = bytes(d["payload"])
        assert d == f
