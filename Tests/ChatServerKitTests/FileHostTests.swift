import Foundation
import Testing
@testable import ChatServerKit

/// The upload store's bounds without sockets (issue 43, items 3 and 7).
@Suite("files through the host: slots and room")
struct FileHostTests {
    static func host(_ configure: (inout FileHost.Limits) -> Void = { _ in }) throws -> (FileHost, String) {
        let directory = NSTemporaryDirectory() + "chat-tui-files-\(UUID().uuidString)"
        var limits = FileHost.Limits()
        configure(&limits)
        return (try FileHost(directory: directory, limits: limits, now: 1_000_000, log: { _ in }), directory)
    }

    @Test("one address holds two uploads under way whatever owners it uses; another address is not held up")
    func twoAnAddress() throws {
        let (files, directory) = try Self.host()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var started: [FileHost.Upload] = []
        for owner in ["guest:a", "account:b", "account:c"] {
            if case .success(let upload) = files.begin(name: "x", type: nil, length: 1000, owner: owner, address: "127.0.0.2") { started.append(upload) }
        }
        #expect(started.count == 2)
        guard case .failure(let refusal) = files.begin(name: "x", type: nil, length: 1000, owner: "account:d", address: "127.0.0.2") else {
            Issue.record("a third from the address was taken"); return
        }
        #expect(refusal.status == 429)
        guard case .success(let other) = files.begin(name: "y", type: nil, length: 1000, owner: "guest:e", address: "127.0.0.3") else {
            Issue.record("another address was refused"); return
        }
        // An ended upload frees its address's slot.
        files.abort(started[0])
        guard case .success(let again) = files.begin(name: "z", type: nil, length: 1000, owner: "account:d", address: "127.0.0.2") else {
            Issue.record("the freed slot was not given"); return
        }
        for upload in [started[1], other, again] { files.abort(upload) }
    }

    @Test("the free-space floor counts what uploads under way will still write: sixteen at once cannot all pass it")
    func floorCountsInFlight() throws {
        let probe = try Self.host()
        let free = probe.0.freeSpace()
        try? FileManager.default.removeItem(atPath: probe.1)
        // Room for one 100 MiB upload above the floor, not two (50 MiB of slack for whatever else writes meanwhile).
        let (files, directory) = try Self.host { $0.keepFree = free - (150 << 20); $0.concurrentPerAddress = 16 }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard case .success(let first) = files.begin(name: "a", type: nil, length: 100 << 20, owner: "guest:a", address: "127.0.0.2") else {
            Issue.record("the first was refused"); return
        }
        guard case .failure(let refusal) = files.begin(name: "b", type: nil, length: 100 << 20, owner: "guest:b", address: "127.0.0.2") else {
            Issue.record("the second passed the floor with the first's bytes still to come"); return
        }
        #expect(refusal.status == 507)
        files.abort(first)
    }

    @Test("the quota counts against the address as well as the owner: a guest and the accounts it registers share one; after a restart too (issue 43, item 7)")
    func quotaPerAddress() throws {
        let (files, directory) = try Self.host { $0.quota = 1000 }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard case .success(let first) = files.begin(name: "a", type: nil, length: 800, owner: "guest:a", address: "127.0.0.2") else {
            Issue.record("refused"); return
        }
        #expect(files.append(first, Array(repeating: 1, count: 800)) == nil)
        guard case .success = files.finish(first, now: 1_000_000) else { Issue.record("not finished"); return }
        guard case .failure(let refusal) = files.begin(name: "b", type: nil, length: 300, owner: "account:b", address: "127.0.0.2") else {
            Issue.record("a new account on the same address got a quota of its own"); return
        }
        #expect(refusal.status == 507 && refusal.reason.hasPrefix("files from your address would pass its quota"))
        guard case .success(let other) = files.begin(name: "c", type: nil, length: 300, owner: "account:c", address: "127.0.0.3") else {
            Issue.record("another address was refused"); return
        }
        files.abort(other)
        guard case .success(let exempt) = files.begin(name: "d", type: nil, length: 300, owner: "account:d", address: "") else {
            Issue.record("an exempt (loopback) upload was counted against an address"); return
        }
        files.abort(exempt)
        // Read again at a restart: the file's address is in its description.
        let again = try FileHost(directory: directory, limits: { var l = FileHost.Limits(); l.quota = 1000; return l }(), now: 1_000_001, log: { _ in })
        guard case .failure = again.begin(name: "e", type: nil, length: 300, owner: "account:e", address: "127.0.0.2") else {
            Issue.record("the address's files were forgotten at the restart"); return
        }
    }

    @Test("the upload worker's jobs: bytes, then the file stored with its SHA-256; the books kept by the loop when the outcome comes")
    func workerStores() throws {
        let (files, directory) = try Self.host()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard case .success(let upload) = files.begin(name: "a.txt", type: "text/plain", length: 10, owner: "guest:a", address: "127.0.0.2") else {
            Issue.record("refused"); return
        }
        let id = ConnectionID(1)
        guard case .written(5, nil) = UploadJob.write(id, upload, Array("hello".utf8)).run(in: directory),
              case .written(5, nil) = UploadJob.write(id, upload, Array("world".utf8)).run(in: directory) else {
            Issue.record("a write failed"); return
        }
        #expect(files.entries.isEmpty, "nothing is served before the loop has its outcome")
        guard case .stored(let result) = UploadJob.store(id, upload, now: 1_000_000).run(in: directory) else { Issue.record("not stored"); return }
        files.stored(upload, result)
        let entry = try #require(files.entries[upload.id])
        #expect(entry.size == 10 && entry.sha256 == "936a185caaa266bb9cbe981e9e05cb78cd732b0b3280eb944412bb6f8f8f07af")
        #expect(FileManager.default.fileExists(atPath: directory + "/" + upload.id) && !FileManager.default.fileExists(atPath: directory + "/" + upload.id + ".part"))
        // The slot is free again: two more from the address are taken.
        for name in ["b", "c"] {
            guard case .success(let next) = files.begin(name: name, type: nil, length: 1, owner: "guest:a", address: "127.0.0.2") else {
                Issue.record("the stored upload kept its slot"); return
            }
            files.abort(next)
        }
    }

    @Test("a write the disk refuses (ENOSPC) is said once; later writes are skipped, storing refuses, nothing is left, the books are given back once")
    func workerDiskFull() throws {
        let (files, directory) = try Self.host()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard case .success(let real) = files.begin(name: "a", type: nil, length: 10, owner: "guest:a", address: "127.0.0.2") else {
            Issue.record("refused"); return
        }
        // The same upload writing to /dev/full: every write fails with ENOSPC.
        close(real.fd)
        let full = FileHost.Upload(id: real.id, name: real.name, type: real.type, length: 10, owner: real.owner, address: real.address,
                                   fd: open("/dev/full", O_WRONLY))
        let id = ConnectionID(1)
        guard case .written(5, let failure?) = UploadJob.write(id, full, Array("hello".utf8)).run(in: directory) else {
            Issue.record("the full disk was not said"); return
        }
        #expect(failure.hasPrefix("cannot store the file: "))
        guard case .written(5, nil) = UploadJob.write(id, full, Array("world".utf8)).run(in: directory) else { Issue.record("said twice"); return }
        guard case .stored(.failure(let refusal)) = UploadJob.store(id, full, now: 1_000_000).run(in: directory) else {
            Issue.record("a failed upload was stored"); return
        }
        #expect(refusal.status == 507 && full.closed)
        _ = UploadJob.discard(full).run(in: directory)
        files.release(real)
        files.stored(real, .failure(refusal))
        #expect(files.entries.isEmpty && !FileManager.default.fileExists(atPath: directory + "/" + real.id + ".part"))
        // Given back once (released, then its outcome): two may be under way from the address again, not three.
        var held: [FileHost.Upload] = []
        for name in ["b", "c"] {
            guard case .success(let next) = files.begin(name: name, type: nil, length: 1, owner: "guest:\(name)", address: "127.0.0.2") else {
                Issue.record("the slot was not given back"); return
            }
            held.append(next)
        }
        if case .success(let third) = files.begin(name: "d", type: nil, length: 1, owner: "guest:d", address: "127.0.0.2") {
            Issue.record("a third from the address was taken")
            files.abort(third)
        }
        for upload in held { files.abort(upload) }
    }
}
