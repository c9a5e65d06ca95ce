"""A bystander chatting while one address floods, a connection storm hits from a few
addresses, and 1,500 slowloris connections pile up. The latency figures are printed (timing
is noise on this machine; `make bench` reports them too); what is asserted does not depend on
it: every bystander message arrives, the flood is held back to a trickle, the storm's hosts
are refused past their limit, a newcomer still gets in, and the server's memory stays bounded."""
from conftest import Server
import load_attacks


def test_bystander_through_flood_storm_and_slowloris():
    server = Server()
    try:
        figures = load_attacks.run(server.port, server.process.pid)
        print("\n" + load_attacks.report(figures))
        for phase in ("baseline", "flood", "storm", "slowloris"):
            assert figures[phase]["missing"] == 0, f"{phase}: bystander messages lost: {figures}"
        # Paced at a burst of 20 and 4 a second: without pacing this would be hundreds of thousands.
        assert figures["flood"]["flood_lines_relayed"] < 1000, figures["flood"]
        assert "Too many new connections from your address" in server.log_text()
        assert figures["slowloris"]["held"] >= 1000, figures["slowloris"]
        newcomer = load_attacks.Line(server.port, "newcomer")
        newcomer.sock.close()
        assert figures["rss_end_kib"] < figures["rss_start_kib"] + 100 * 1024, figures
    finally:
        server.stop()
