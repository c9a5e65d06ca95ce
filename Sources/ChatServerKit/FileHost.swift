import ChatTransport
import IRCWire
#if canImport(Glibc)
import Glibc
#endif

/// Files people upload through the host (`soju.im/FILEHOST`), kept in the data directory's
/// `uploads/`: each as `ID` with `ID.meta` beside it (size, time, owner, SHA-256, type, name on
/// one line), written to `ID.part` while it arrives and renamed when whole, so a half upload is
/// never served. Bounded by a size per file, a quota per owner (an account, or an address for
/// guests) and a number of days. The loop keeps the books (quotas, slots, the files kept) and
/// opens each `.part`; the bytes, the fsync, the rename and the description are written by the
/// upload worker (`UploadJob`, one thread, jobs in order), so a slow disk never holds the loop;
/// a disk that fills fails that upload alone (507), nothing else.
final class FileHost {
    struct Limits: Sendable {
        /// The largest file taken.
        var maxSize = 100 << 20
        /// Bytes one owner may keep at once.
        var quota = 500 << 20
        /// Days a file is kept (0: until the host deletes it).
        var days = 7
        /// Bytes all uploads together may keep, and room always left on the disk (history lives there too).
        var total = 5 << 30
        var keepFree = 1 << 30
        /// Uploads under way at once, in all and per owner.
        var concurrent = 16
        var concurrentPerOwner = 2
        /// Uploads under way from one address (a /64 for IPv6), whatever accounts it uses: two
        /// addresses trickling can no longer hold every slot (issue 43, item 3).
        var concurrentPerAddress = 2
    }

    struct Entry: Sendable, Equatable {
        let id: String
        let name: String
        let type: String
        let size: Int
        let owner: String
        /// Seconds since the epoch.
        let time: Double
        let sha256: String
        /// The address it came from (a throttle key; "" when exempt, or for a file from before).
        var address = ""
    }

    /// One file arriving. Its names, owner and length are fixed; its disk side (`fd`, `written`,
    /// `flushed`, `hasher`, `closed`, `failed`) belongs to whoever writes it — the upload worker,
    /// jobs in order, once the loop has handed it over — and its books (`accounted`) to the loop.
    final class Upload: @unchecked Sendable {
        let id: String
        let name: String
        let type: String
        let length: Int
        let owner: String
        /// The address it comes from (`ServerState.throttleKey`).
        let address: String
        let fd: Int32
        var written = 0
        /// Written back to disk up to here (the kernel asked to start as the bytes arrive, so the
        /// last fsync has little left to wait for).
        var flushed = 0
        var hasher = SHA256Hasher()
        /// Its descriptor is closed (stored or discarded).
        var closed = false
        /// A write failed (why): what follows is not written, and it is not stored.
        var failed: String?
        /// Its slot and reserved bytes are given back (the loop's).
        var accounted = false

        init(id: String, name: String, type: String, length: Int, owner: String, address: String, fd: Int32) {
            self.id = id
            self.name = name
            self.type = type
            self.length = length
            self.owner = owner
            self.address = address
            self.fd = fd
        }
    }

    struct Refusal: Error, Equatable {
        let status: Int
        let reason: String
    }

    let directory: String
    let limits: Limits
    private(set) var entries: [String: Entry] = [:]
    private var used: [String: Int] = [:]
    private var arriving: [String: Int] = [:]
    /// Uploads under way by address (owner: `begin` and `release`; bound: `concurrent`), their
    /// declared bytes, and the bytes kept from each address (bound: one entry an address with
    /// files; end: its last file's removal).
    private var arrivingFrom: [String: Int] = [:]
    private var reservedFrom: [String: Int] = [:]
    private var usedFrom: [String: Int] = [:]
    private var reserved: [String: Int] = [:]
    private var arrivingCount = 0
    private let log: (String) -> Void

    /// Opens (making) the directory and reads what it holds: leftovers of uploads cut off by a
    /// restart are deleted, files past their days too.
    convenience init(_ settings: UploadSettings, now: Double, log: @escaping (String) -> Void) throws(Files.Failure) {
        var limits = Limits()
        limits.maxSize = settings.maxSize
        limits.quota = settings.quota
        limits.total = settings.total
        limits.days = settings.days
        try self.init(directory: settings.directory, limits: limits, now: now, log: log)
    }

    init(directory: String, limits: Limits, now: Double, log: @escaping (String) -> Void) throws(Files.Failure) {
        self.directory = directory
        self.limits = limits
        self.log = log
        try Files.createDirectories(directory, mode: 0o700)
        for name in Files.list(directory) ?? [] {
            if name.hasSuffix(".part") { unlink(directory + "/" + name); continue }
            // A file without its description (a crash between the two) is not served: removed.
            if Self.isID(name), !Files.exists(directory + "/" + name + ".meta") { unlink(directory + "/" + name); continue }
            guard name.hasSuffix(".meta") else { continue }
            let id = String(name.dropLast(5))
            guard Self.isID(id), let text = Files.readText(directory + "/" + name), let entry = Self.entry(id: id, line: text),
                  Files.regularFileSize(directory + "/" + id) == entry.size else {
                log("uploads: \(PlainText.visible(name)) does not describe a whole file; removed")
                unlink(directory + "/" + name)
                if Self.isID(id) { unlink(directory + "/" + id) }
                continue
            }
            entries[id] = entry
            used[entry.owner, default: 0] += entry.size
            if !entry.address.isEmpty { usedFrom[entry.address, default: 0] += entry.size }
        }
        purge(now: now)
    }

    static func isID(_ text: String) -> Bool {
        text.utf8.count == 24 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    static func entry(id: String, line: String) -> Entry? {
        // v2 adds the address before the name: `v2 SIZE TIME OWNER SHA TYPE ADDRESS NAME`, tab-separated.
        if line.hasPrefix("v2\t") {
            let fields = line.dropFirst(3).split(separator: "\t", maxSplits: 6, omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 7, let size = Int(fields[0]), let time = Double(fields[1]) else { return nil }
            let name = fields[6].hasSuffix("\n") ? String(fields[6].dropLast()) : fields[6]
            return Entry(id: id, name: name, type: fields[4], size: size, owner: fields[2], time: time, sha256: fields[3], address: fields[5])
        }
        let fields = line.split(separator: "\t", maxSplits: 5, omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 6, let size = Int(fields[0]), let time = Double(fields[1]) else { return nil }
        let name = fields[5].hasSuffix("\n") ? String(fields[5].dropLast()) : fields[5]
        return Entry(id: id, name: name, type: fields[4], size: size, owner: fields[2], time: time, sha256: fields[3])
    }

    func usage(of owner: String) -> Int { used[owner] ?? 0 }

    /// Starts an upload of `length` bytes, or says why not: too large (413), past the owner's
    /// quota (507), too many at once (429), or the disk refusing the file (507).
    func begin(name offered: String?, type offeredType: String?, length: Int, owner: String, address: String) -> Result<Upload, Refusal> {
        guard length <= limits.maxSize else {
            return .failure(Refusal(status: 413, reason: "files up to \(Self.size(limits.maxSize)) are taken; this one is \(Self.size(length))"))
        }
        // Uploads under way count with their whole length, so two at once cannot pass the quota together.
        let held = usage(of: owner) + (reserved[owner] ?? 0)
        guard held + length <= limits.quota else {
            return .failure(Refusal(status: 507, reason: "your files would pass your quota of \(Self.size(limits.quota)) (\(Self.size(held)) kept)"))
        }
        // And against the address, whatever accounts it uses (a guest and the accounts it
        // registers each hour kept four quotas): one quota an address ("" is exempt: loopback).
        let heldFrom = address.isEmpty ? 0 : (usedFrom[address] ?? 0) + (reservedFrom[address] ?? 0)
        guard heldFrom + length <= limits.quota else {
            return .failure(Refusal(status: 507, reason: "files from your address would pass its quota of \(Self.size(limits.quota)) (\(Self.size(heldFrom)) kept)"))
        }
        let inFlight = reserved.values.reduce(0, +)
        let stored = used.values.reduce(0, +) + inFlight
        // The disk's room less what uploads under way will still write (their declared lengths:
        // sixteen started together could otherwise all pass the floor and then fill it).
        guard stored + length <= limits.total, freeSpace() - inFlight - length >= limits.keepFree else {
            log("uploads: refused \(Self.size(length)): \(Self.size(stored)) kept of \(Self.size(limits.total)), \(Self.size(freeSpace())) free on the disk")
            return .failure(Refusal(status: 507, reason: "the host has no room for more files right now"))
        }
        guard arrivingCount < limits.concurrent, (arriving[owner] ?? 0) < limits.concurrentPerOwner,
              address.isEmpty || (arrivingFrom[address] ?? 0) < limits.concurrentPerAddress else {
            return .failure(Refusal(status: 429, reason: "too many uploads at once; try again when one has finished"))
        }
        let id = Crypto.hex(Crypto.randomBytes(12))
        let fd = open(directory + "/" + id + ".part", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let reason = "cannot store the file: \(TransportError.errnoText(errno))"
            log("uploads: \(reason)")
            return .failure(Refusal(status: 507, reason: reason))
        }
        arrivingCount += 1
        arriving[owner, default: 0] += 1
        arrivingFrom[address, default: 0] += 1
        reservedFrom[address, default: 0] += length
        reserved[owner, default: 0] += length
        let name = SafeFileName.make(offered ?? "upload")
        return .success(Upload(id: id, name: name, type: Self.storedType(offeredType), length: length, owner: owner, address: address, fd: fd))
    }

    /// Writes bytes of an upload, now (tests, and hosts without a worker); a refusal (a full disk) ends it.
    func append(_ upload: Upload, _ bytes: [UInt8]) -> Refusal? {
        guard let reason = Self.write(upload, bytes) else { return nil }
        log("uploads: \(reason)")
        abort(upload)
        return Refusal(status: 507, reason: reason)
    }

    /// The disk side of `append` (the upload worker's): the bytes written and hashed; why not, the
    /// first time a write fails (after that nothing more is written, and nil is said).
    static func write(_ upload: Upload, _ bytes: [UInt8]) -> String? {
        guard upload.failed == nil, !upload.closed else { return nil }
        var offset = 0
        while offset < bytes.count {
            let wrote = bytes.withUnsafeBytes { Glibc.write(upload.fd, $0.baseAddress! + offset, bytes.count - offset) }
            if wrote < 0 {
                if errno == EINTR { continue }
                let reason = "cannot store the file: \(TransportError.errnoText(errno))"
                upload.failed = reason
                return reason
            }
            offset += wrote
        }
        upload.hasher.update(bytes)
        upload.written += bytes.count
        // Every 8 MiB, writeback starts for what came (POSIX_FADV_DONTNEED on Linux: without
        // waiting, and the upload does not crowd the page cache): the fsync at the end then
        // waits for at most the last few MiB, not the whole file.
        if upload.written - upload.flushed >= 8 << 20 {
            _ = posix_fadvise(upload.fd, off_t(upload.flushed), off_t(upload.written - upload.flushed), POSIX_FADV_DONTNEED)
            upload.flushed = upload.written
        }
        return nil
    }

    /// Bytes free on the disk that holds the uploads (and the history).
    func freeSpace() -> Int {
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { return 0 }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    /// The upload is whole: made durable, renamed into place and described, now (tests, and
    /// hosts without a worker).
    func finish(_ upload: Upload, now: Double) -> Result<Entry, Refusal> {
        let result = Self.store(upload, in: directory, now: now)
        stored(upload, result)
        return result
    }

    /// The disk side of `finish` (the upload worker's): fsync, rename into place, the description
    /// beside it; on any failure nothing of it is left.
    static func store(_ upload: Upload, in directory: String, now: Double) -> Result<Entry, Refusal> {
        let part = directory + "/" + upload.id + ".part"
        if let failed = upload.failed {
            discard(upload, in: directory)
            return .failure(Refusal(status: 507, reason: failed))
        }
        let failed = fsync(upload.fd) != 0
        let code = errno
        close(upload.fd)
        upload.closed = true
        let entry = Entry(id: upload.id, name: upload.name, type: upload.type, size: upload.written, owner: upload.owner,
                          time: now, sha256: Crypto.hex(upload.hasher.finalize()), address: upload.address)
        let line = "v2\t\(entry.size)\t\(entry.time)\t\(entry.owner)\t\(entry.sha256)\t\(entry.type)\t\(entry.address)\t\(entry.name)\n"
        do {
            guard !failed else { throw Files.Failure("cannot write", part, code) }
            guard rename(part, directory + "/" + upload.id) == 0 else { throw Files.Failure("cannot rename", part) }
            try Files.writeAtomically(directory + "/" + upload.id + ".meta", Array(line.utf8), mode: 0o600)
        } catch {
            unlink(part)
            unlink(directory + "/" + upload.id)
            return .failure(Refusal(status: 507, reason: "cannot store the file: \(error)"))
        }
        return .success(entry)
    }

    /// The books after `store` (the loop's): the slot and reservation given back, and a stored
    /// file counted and served from now on.
    func stored(_ upload: Upload, _ result: Result<Entry, Refusal>) {
        release(upload)
        switch result {
        case .success(let entry):
            entries[upload.id] = entry
            used[upload.owner, default: 0] += entry.size
            if !entry.address.isEmpty { usedFrom[entry.address, default: 0] += entry.size }
        case .failure(let refusal):
            log("uploads: \(refusal.reason)")
        }
    }

    /// An upload cut off (the connection closed, or refused mid-way), now: its part is deleted.
    func abort(_ upload: Upload) {
        Self.discard(upload, in: directory)
        release(upload)
    }

    /// The disk side of `abort` (the upload worker's, after the upload's writes): closed and deleted.
    static func discard(_ upload: Upload, in directory: String) {
        guard !upload.closed else { return }
        close(upload.fd)
        upload.closed = true
        unlink(directory + "/" + upload.id + ".part")
    }

    /// The books of an upload cut off (the loop's; once): its slot and reservation given back.
    func release(_ upload: Upload) {
        guard !upload.accounted else { return }
        upload.accounted = true
        reserved[upload.owner, default: upload.length] -= upload.length
        if reserved[upload.owner] ?? 0 <= 0 { reserved[upload.owner] = nil }
        arrivingCount -= 1
        arriving[upload.owner, default: 1] -= 1
        if arriving[upload.owner] == 0 { arriving[upload.owner] = nil }
        arrivingFrom[upload.address, default: 1] -= 1
        if arrivingFrom[upload.address] == 0 { arrivingFrom[upload.address] = nil }
        reservedFrom[upload.address, default: upload.length] -= upload.length
        if reservedFrom[upload.address] ?? 0 <= 0 { reservedFrom[upload.address] = nil }
    }

    /// Files past their days are deleted.
    func purge(now: Double) {
        guard limits.days > 0 else { return }
        for entry in entries.values where now - entry.time > Double(limits.days) * 86_400 {
            remove(entry.id)
        }
    }

    func remove(_ id: String) {
        guard let entry = entries.removeValue(forKey: id) else { return }
        used[entry.owner, default: entry.size] -= entry.size
        if used[entry.owner] ?? 0 <= 0 { used[entry.owner] = nil }
        if !entry.address.isEmpty {
            usedFrom[entry.address, default: entry.size] -= entry.size
            if usedFrom[entry.address] ?? 0 <= 0 { usedFrom[entry.address] = nil }
        }
        unlink(directory + "/" + id + ".meta")
        unlink(directory + "/" + id)
    }

    func path(of id: String) -> String { directory + "/" + id }

    /// The URL path of a stored file: its ID, then its name (for the reader; only the ID is looked up).
    static func urlPath(_ entry: Entry) -> String { "/files/\(entry.id)/" + URLText.percentEncoded(entry.name) }

    /// What a file is served as: images and plain text as themselves (still as attachments),
    /// everything else as bytes, so nothing uploaded is ever run or rendered as a page.
    static func storedType(_ offered: String?) -> String {
        let type = (offered ?? "").split(separator: ";").first.map { $0.trimmedOfWhitespace().lowercased() } ?? ""
        let safe = ["image/png", "image/jpeg", "image/gif", "image/webp", "text/plain", "application/pdf", "application/zip",
                    "audio/mpeg", "audio/ogg", "video/mp4", "video/webm"]
        return safe.contains(type) ? type : "application/octet-stream"
    }


    /// 1.2 MiB, 340 KiB, 12 B.
    static func size(_ bytes: Int) -> String {
        if bytes < 1024 { return "\(bytes) B" }
        let units = ["KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024 && unit < units.count - 1 { value /= 1024; unit += 1 }
        let rounded = (value * 10).rounded() / 10
        let text = rounded == rounded.rounded() && rounded >= 10 ? String(Int(rounded)) : String(rounded)
        return text + " " + units[unit]
    }
}

/// What the upload worker does (`ServerRuntime.uploads`, one thread, jobs in order): an upload's
/// bytes, its storing, or its discarding, each on the disk only; the loop keeps the books when
/// the outcome comes back. Bound: the loop stops reading an upload whose unwritten bytes pass
/// `ServerRuntime.uploadQueueBound` (1 MiB), so at most that (and one read) waits per upload.
enum UploadJob: Sendable {
    case write(ConnectionID, FileHost.Upload, [UInt8])
    case store(ConnectionID, FileHost.Upload, now: Double)
    case discard(FileHost.Upload)

    func run(in directory: String) -> UploadOutcome {
        switch self {
        case .write(_, let upload, let bytes): return .written(bytes.count, failure: FileHost.write(upload, bytes))
        case .store(_, let upload, let now): return .stored(FileHost.store(upload, in: directory, now: now))
        case .discard(let upload):
            FileHost.discard(upload, in: directory)
            return .discarded
        }
    }
}

enum UploadOutcome: Sendable {
    /// So many bytes taken off the queue; why writing failed, the first time it does.
    case written(Int, failure: String?)
    case stored(Result<FileHost.Entry, FileHost.Refusal>)
    case discarded
}
