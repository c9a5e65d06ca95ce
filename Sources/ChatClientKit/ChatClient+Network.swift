extension ChatClient {
    /// `network` (`host:port`, the local log's key for this client's lines) read without awaiting
    /// the actor, for front ends that name several networks: both come from the same `config`.
    public nonisolated var logKey: String { "\(config.host):\(config.port)" }
}
