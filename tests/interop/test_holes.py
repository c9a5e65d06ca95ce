"""Issue 23's holes, each tried against the real server as an attacker would (from 127/8
addresses other than 127.0.0.1, which the server treats as anyone's). Latencies are printed,
never asserted (timing is noise here; `make bench` reports them); what is asserted are counts:
delivered or not, refused or not, stored or not."""
import json

from conftest import BINARY
import hole_attacks


def show(name, figures):
    print(f"\n{name}: " + json.dumps(figures, default=str))


def test_history_queries_and_join_churn_do_not_freeze_the_server():
    figures = hole_attacks.history_freeze(BINARY, messages=30)
    show("history freeze", figures)
    for phase in ("baseline", "history_queries", "join_part_flood"):
        assert figures[phase]["missing"] == 0, figures
    # The attack really ran: its queries were answered, the churn happened.
    assert figures["history_queries"]["connections"] == 16, figures
    assert figures["history_queries"]["queries_answered"] > 16, figures
    assert figures["join_part_flood"]["join_part_cycles"] > 100, figures
    assert figures["found_the_message"]


def test_a_full_disk_holds_echoes_refuses_past_the_bound_and_loses_nothing_confirmed():
    figures = hole_attacks.full_disk(BINARY, backlog=50)
    show("full disk", figures)
    assert figures["sent_until_refused"] is not None, "refused past the bound"
    assert figures["echoed_while_full"] == 0, "no echo before its row is stored"
    assert figures["delivered_while_full"] == figures["sent_until_refused"], "the refused message reached nobody"
    assert figures["echoed_after"] == figures["delivered_while_full"], "every held echo came once stored"
    assert figures["echoed_not_stored"] == [], "an echo means stored"
    assert not figures["refused_but_stored"]


def test_a_server_that_cannot_write_its_data_directory_refuses_to_start():
    figures = hole_attacks.unwritable_start(BINARY)
    assert figures["exit_code"] != 0, figures
    assert "cannot be written" in figures["log"], figures


def test_silent_connections_never_lock_a_newcomer_out():
    figures = hole_attacks.silent_connections(BINARY)
    show("silent connections", figures)
    assert figures["silent_opened"] + figures["refused"] == 2560
    assert figures["newcomers_registered"] == 5, figures
    # Past the cap, the oldest of the most crowded networks made room.
    assert figures["silent_closed_by_server"] >= 5, figures


def test_guessers_never_lock_the_owner_out():
    figures = hole_attacks.account_lockout(BINARY, rounds=12)
    show("account lockout", figures)
    assert figures["owner_refused"] == 0 and figures["owner_ok"] == 12, figures
    assert figures["guesser_refused_unchecked"] == "904", figures


def test_tls_offers_only_cheap_groups_and_counts_handshake_cpu_per_address():
    figures = hole_attacks.tls_handshakes(BINARY)
    show("tls", figures)
    assert figures["X25519"] and figures["P-256"] and figures["P-384"], figures
    assert not figures["ffdhe8192"] and not figures["ffdhe2048"], figures
    assert figures["first_from_attacker"] and not figures["next_from_attacker"] and figures["from_elsewhere"], figures
    assert figures["logged"], figures
