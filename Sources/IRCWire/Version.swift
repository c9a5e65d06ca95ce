/// chat-tui's version, one place for all that say it: the server's 002/004 and `--version`
/// (`chat-tui-0.2`), the client's CTCP VERSION answer, the man pages.
public enum ChatTUIVersion {
    public static let number = "0.2"
}
