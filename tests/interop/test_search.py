"""soju.im/search against our server (issue 47, item 5): SEARCH finds what the asker may read —
the rooms they are in — by text, sender, time and limit, in a soju.im/search batch; a secret
room's lines are never found by someone not in it, and asking for it by name is refused."""
import time

from conftest import RawClient, Server, wait_for_port


def connect(port, nick):
    client = RawClient(port)
    client.send("CAP REQ :soju.im/search batch server-time message-tags")
    client.send("CAP END")
    client.register(nick)
    return client


def search(client, attributes):
    client.send("SEARCH " + attributes)
    found = []
    client.wait_for(lambda l: (found.append(l) if "batch=" in l or " BATCH " in l else None) or (" BATCH -" in l), timeout=10)
    assert " BATCH +" in found[0] and found[0].endswith(" soju.im/search")
    return [l.split(" :", 2)[-1] if "PRIVMSG" in l else l for l in found[1:-1]]


def test_search_finds_what_the_asker_may_read():
    server = Server()
    try:
        bob, carol = connect(server.port, "bob"), connect(server.port, "carol")
        carol.send("JOIN #hidden")
        carol.wait_for(lambda l: " 366 " in l)
        carol.send("MODE #hidden +s")
        carol.send("PRIVMSG #hidden :the deploy secret is swordfish")
        carol.send("PRIVMSG #lobby :deploy starts at noon")
        bob.send("PRIVMSG #lobby :Deploy done, all green")
        bob.send("PRIVMSG #lobby :lunch?")
        # bob's lines are in before carol's log lines (two connections: their order is not otherwise given).
        bob.send("PING :before")
        bob.wait_for(lambda l: "PONG" in l and "before" in l)
        for n in range(5):
            carol.send(f"PRIVMSG #lobby :deploy log line {n}")
        carol.send("PING :sent")
        carol.wait_for(lambda l: "PONG" in l and "sent" in l)
        bob.send("PING :sync")
        bob.wait_for(lambda l: "PONG" in l and "sync" in l)

        assert search(bob, "text=deploy;limit=3") == ["deploy log line 2", "deploy log line 3", "deploy log line 4"]
        everything = search(bob, "text=DEPLOY")
        assert "Deploy done, all green" in everything and "deploy starts at noon" in everything
        assert not any("swordfish" in line for line in everything), "a secret room bob is not in"
        assert search(bob, "from=bob;in=#lobby") == ["Deploy done, all green", "lunch?"]
        assert search(bob, "text=deploy;before=2000-01-01T00:00:00.000Z") == []
        bob.send("SEARCH in=#hidden;text=swordfish")
        assert "FAIL SEARCH INVALID_PARAMS in" in bob.wait_for(lambda l: "FAIL SEARCH" in l)
        bob.send("SEARCH colour=blue")
        assert "FAIL SEARCH INVALID_PARAMS colour" in bob.wait_for(lambda l: "FAIL SEARCH" in l)
        assert search(carol, "text=swordfish") == ["the deploy secret is swordfish"]
        bob.close()
        carol.close()
    finally:
        server.stop()
