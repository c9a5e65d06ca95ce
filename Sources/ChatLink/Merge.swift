/// What to do with a room both sides of a link know, by its timestamp (creation time): the
/// older side's modes and statuses win; on a tie both are merged. InspIRCd's rule
/// (spanningtree's FJOIN handler), which Anope and every TS server follow too.
public enum RoomMerge: Equatable, Sendable {
    /// Ours is older: their members come in without status, their modes are ignored.
    case keepOurs
    /// Theirs is older: our modes and statuses are removed, theirs are taken, and the room's
    /// timestamp becomes theirs.
    case takeTheirs
    /// The same age: modes and statuses of both sides are kept (`mergeParameter` for a mode
    /// both set with different parameters).
    case merge

    public static func decide(ours: Int, theirs: Int) -> RoomMerge {
        if ours < theirs { return .keepOurs }
        if theirs < ours { return .takeTheirs }
        return .merge
    }

    /// Two values of one parameter mode set on both sides of a tie: the same choice on every
    /// server, whichever it hears first (InspIRCd's `ResolveModeConflict`: the larger limit, the
    /// key that sorts last).
    public static func mergeParameter(_ mode: Character, ours: String, theirs: String) -> String {
        if mode == "l", let a = Int(ours), let b = Int(theirs) { return String(max(a, b)) }
        return max(ours, theirs)
    }
}

/// Two users on one nickname after a link or a rename crossing one: who gives it up. InspIRCd's
/// rule: with different timestamps, between different people (ident@ip) the older keeps it,
/// between the same person (a reconnect racing its ghost) the newer does; with equal
/// timestamps both give it up. Giving up is `SAVE`: the nickname becomes the user's UUID.
public enum NickCollision: Equatable, Sendable {
    case renameOurs
    case renameTheirs
    case renameBoth

    public static func decide(oursTS: Int, oursIdentity: String, theirsTS: Int, theirsIdentity: String) -> NickCollision {
        if oursTS == theirsTS { return .renameBoth }
        let samePerson = oursIdentity == theirsIdentity
        if (samePerson && theirsTS < oursTS) || (!samePerson && theirsTS > oursTS) { return .renameTheirs }
        return .renameOurs
    }
}
