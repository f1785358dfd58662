@testable import AsyncHTTP
import XCTest

/// The batch's scheduling decisions and its summed progress, as action sequences (no requests, no tasks).
final class BatchSchedulerTests: XCTestCase {
    func testMembersStartInOrderNoMoreThanTheLimitAtOnce() {
        var scheduler = BatchScheduler(limit: 2, cancelsAllOnFailure: true)
        XCTAssertEqual(scheduler.add(0), [.start(0)])
        XCTAssertEqual(scheduler.add(1), [.start(1)])
        XCTAssertEqual(scheduler.add(2), [])
        XCTAssertEqual(scheduler.add(3), [])
        XCTAssertEqual(scheduler.ended(1, failed: false), [.start(2)])
        XCTAssertEqual(scheduler.ended(0, failed: false), [.start(3)])
        XCTAssertEqual(scheduler.running, [2, 3])
        XCTAssertEqual(scheduler.ended(2, failed: false), [])
        XCTAssertEqual(scheduler.finishAdding(), [], "one member still runs")
        XCTAssertEqual(scheduler.ended(3, failed: false), [.end])
    }

    func testMembersAddedWhileTheBatchRunsJoinTheQueue() {
        var scheduler = BatchScheduler(limit: 1, cancelsAllOnFailure: true)
        XCTAssertEqual(scheduler.add(0), [.start(0)])
        XCTAssertEqual(scheduler.ended(0, failed: false), [], "not finished: more may come")
        XCTAssertEqual(scheduler.add(1), [.start(1)])
        XCTAssertEqual(scheduler.finishAdding(), [])
        XCTAssertEqual(scheduler.ended(1, failed: false), [.end])
        XCTAssertEqual(scheduler.add(2), [.drop(2)], "after the end, a new member is dropped")
    }

    func testAMemberAddedAfterFinishAddingIsDroppedEvenWhileOthersRun() {
        var scheduler = BatchScheduler(limit: 2, cancelsAllOnFailure: true)
        XCTAssertEqual(scheduler.add(0), [.start(0)])
        XCTAssertEqual(scheduler.finishAdding(), [])
        XCTAssertEqual(scheduler.add(1), [.drop(1)], "HTTPBatch.add documents it as cancelled; it used to start")
        XCTAssertEqual(scheduler.running, [0])
        XCTAssertEqual(scheduler.ended(0, failed: false), [.end])
    }

    func testSizeFetchesGoAheadOfEveryWaitingMemberWithinTheLimit() {
        // ASINetworkQueue queued its HEAD requests first: every size is known before the downloads begin.
        var scheduler = BatchScheduler(limit: 2, cancelsAllOnFailure: true)
        XCTAssertEqual(scheduler.add(0, fetchesSize: true), [.fetchSize(0)])
        XCTAssertEqual(scheduler.add(1, fetchesSize: true), [.fetchSize(1)])
        XCTAssertEqual(scheduler.add(2, fetchesSize: true), [], "the limit counts the fetches")
        XCTAssertEqual(scheduler.sizeFetched(0), [.fetchSize(2)], "a fetch before any member")
        XCTAssertEqual(scheduler.sizeFetched(1), [.start(0)])
        XCTAssertEqual(scheduler.finishAdding(), [])
        XCTAssertEqual(scheduler.sizeFetched(2), [.start(1)])
        XCTAssertEqual(scheduler.sizeFetched(2), [], "once")
        XCTAssertEqual(scheduler.ended(0, failed: false), [.start(2)])
        XCTAssertEqual(scheduler.ended(1, failed: false), [])
        XCTAssertEqual(scheduler.ended(2, failed: false), [.end])
        // A cancel drops the fetches not begun; the batch ends when the running one has.
        var cancelled = BatchScheduler(limit: 1, cancelsAllOnFailure: true)
        XCTAssertEqual(cancelled.add(0, fetchesSize: true), [.fetchSize(0)])
        XCTAssertEqual(cancelled.add(1, fetchesSize: true), [])
        XCTAssertEqual(cancelled.cancelAll(), [.cancelRunning, .drop(0), .drop(1)])
        XCTAssertEqual(cancelled.sizeFetched(0), [.end])
    }

    func testAFailureCancelsTheRunningMembersAndDropsTheWaitingOnes() {
        var scheduler = BatchScheduler(limit: 2, cancelsAllOnFailure: true)
        for id in 0..<5 { _ = scheduler.add(id) }
        XCTAssertEqual(scheduler.ended(0, failed: true), [.cancelRunning, .drop(2), .drop(3), .drop(4)])
        XCTAssertEqual(scheduler.add(5), [.drop(5)], "nothing new starts")
        XCTAssertEqual(scheduler.ended(1, failed: true), [.end], "the cancelled member ends the batch")
    }

    func testWithoutCancelsAllOnFailureTheOthersCarryOn() {
        var scheduler = BatchScheduler(limit: 2, cancelsAllOnFailure: false)
        for id in 0..<3 { _ = scheduler.add(id) }
        XCTAssertEqual(scheduler.ended(0, failed: true), [.start(2)])
        _ = scheduler.finishAdding()
        XCTAssertEqual(scheduler.ended(1, failed: false), [])
        XCTAssertEqual(scheduler.ended(2, failed: false), [.end])
    }

    func testCancelAllWithNothingRunningEndsAtOnce() {
        var scheduler = BatchScheduler(limit: 0, cancelsAllOnFailure: true)
        XCTAssertEqual(scheduler.limit, 1, "a limit below 1 runs one at a time")
        XCTAssertEqual(scheduler.cancelAll(), [.end])
        XCTAssertEqual(scheduler.cancelAll(), [])
        var busy = BatchScheduler(limit: 1, cancelsAllOnFailure: true)
        _ = busy.add(0)
        _ = busy.add(1)
        XCTAssertEqual(busy.cancelAll(), [.cancelRunning, .drop(1)])
        XCTAssertEqual(busy.ended(0, failed: true), [.end])
    }

    func testALongQueueIsCompactedAsItDrains() {
        var scheduler = BatchScheduler(limit: 1, cancelsAllOnFailure: false)
        for id in 0..<1000 { _ = scheduler.add(id) }
        var started: [Int] = [0]
        for id in 0..<999 {
            for case .start(let next) in scheduler.ended(id, failed: false) { started.append(next) }
        }
        XCTAssertEqual(started, Array(0..<1000))
        XCTAssertEqual(scheduler.waitingCount, 0)
    }

    // MARK: Progress

    func testSimpleProgressCountsRequests() {
        var aggregate = BatchProgressAggregator(mode: .simple)
        for id in 0..<4 { aggregate.add(id, uploadTotal: 0) }
        aggregate.update(0, HTTPTransferProgress(bytesExpectedToSend: 0, bytesReceived: 500, bytesExpectedToReceive: 1000))
        XCTAssertEqual(aggregate.value.fractionCompleted, 0)
        aggregate.ended(0)
        aggregate.ended(3)
        XCTAssertEqual(aggregate.value.fractionCompleted, 0.5)
        XCTAssertEqual(aggregate.value.requestsEnded, 2)
        XCTAssertEqual(aggregate.value.bytesReceived, 500)
    }

    func testAccurateProgressCountsBytesAgainstKnownTotals() {
        var aggregate = BatchProgressAggregator(mode: .accurate(fetchesSizes: true))
        aggregate.add(0, uploadTotal: 1000)
        aggregate.add(1, uploadTotal: 0)
        aggregate.sizeFound(1, download: 3000)
        XCTAssertEqual(aggregate.value.bytesExpectedToSend, 1000)
        XCTAssertEqual(aggregate.value.bytesExpectedToReceive, 3000, "the HEAD's size counts before the GET runs")
        aggregate.update(0, HTTPTransferProgress(bytesSent: 1000, bytesExpectedToSend: 1000, bytesReceived: 0, bytesExpectedToReceive: 0))
        aggregate.update(1, HTTPTransferProgress(bytesExpectedToSend: 0, bytesReceived: 1000, bytesExpectedToReceive: 3000))
        XCTAssertEqual(aggregate.value.fractionCompleted, 0.5)
        aggregate.ended(0)
        aggregate.update(1, HTTPTransferProgress(bytesExpectedToSend: 0, bytesReceived: 3000, bytesExpectedToReceive: 3000, isFinal: true))
        aggregate.ended(1)
        XCTAssertEqual(aggregate.value.fractionCompleted, 1)
    }

    /// Totals kept as running sums stay right over many members added, updated and ended (no timing checked:
    /// the cost per event was the number of members ever added), an ended member's late update changes nothing,
    /// and each snapshot has a higher sequence number than the last.
    func testTotalsStayRightOverManyMembersAndAnEndedMemberIsFrozen() {
        let count = 5_000
        var aggregate = BatchProgressAggregator(mode: .accurate(fetchesSizes: false))
        for id in 0..<count { aggregate.add(id, uploadTotal: 10) }
        var last = aggregate.value.sequenceNumber
        for id in 0..<count {
            aggregate.update(id, HTTPTransferProgress(bytesSent: 10, bytesExpectedToSend: 10, bytesReceived: 45, bytesExpectedToReceive: 90))
            XCTAssertGreaterThan(aggregate.value.sequenceNumber, last)
            last = aggregate.value.sequenceNumber
        }
        XCTAssertEqual(aggregate.value.requestCount, count)
        XCTAssertEqual(aggregate.value.bytesSent, 10 * count)
        XCTAssertEqual(aggregate.value.bytesReceived, 45 * count)
        XCTAssertEqual(aggregate.value.bytesExpectedToReceive, 90 * count)
        XCTAssertEqual(aggregate.value.fractionCompleted, 0.55, accuracy: 1e-9)
        for id in 0..<count {
            aggregate.update(id, HTTPTransferProgress(bytesSent: 10, bytesExpectedToSend: 10, bytesReceived: 90, bytesExpectedToReceive: 90, isFinal: true))
            aggregate.ended(id)
        }
        XCTAssertEqual(aggregate.value.requestsEnded, count)
        XCTAssertEqual(aggregate.value.bytesReceived, 90 * count)
        XCTAssertEqual(aggregate.value.fractionCompleted, 1)
        aggregate.update(0, HTTPTransferProgress(bytesReceived: 1_000_000, bytesExpectedToReceive: 1_000_000))
        aggregate.ended(0)
        XCTAssertEqual(aggregate.value.bytesReceived, 90 * count, "an ended member's late update is not counted")
        XCTAssertEqual(aggregate.value.requestsEnded, count, "nor its second end")
    }

    func testAResentMemberHoldsItsCountUntilTheResendPassesIt() {
        var aggregate = BatchProgressAggregator(mode: .accurate(fetchesSizes: false))
        aggregate.add(0, uploadTotal: 0)
        aggregate.update(0, HTTPTransferProgress(bytesExpectedToSend: 0, bytesReceived: 60, bytesExpectedToReceive: 100))
        aggregate.update(0, HTTPTransferProgress(bytesExpectedToSend: 0, bytesReceived: 10, bytesExpectedToReceive: 100))
        XCTAssertEqual(aggregate.value.bytesReceived, 60, "a retry starts from 0: the batch does not run backwards")
        aggregate.update(0, HTTPTransferProgress(bytesExpectedToSend: 0, bytesReceived: 100, bytesExpectedToReceive: 100))
        XCTAssertEqual(aggregate.value.bytesReceived, 100)
    }

    /// Two members whose servers announce `Content-Length: 9223372036854775807` and 1 used to overflow the sum
    /// and trap the process; the totals now stop at `Int.max`.
    func testHugeAnnouncedLengthsSaturateInsteadOfTrapping() {
        for mode in [HTTPBatchProgress.Mode.simple, .accurate(fetchesSizes: true)] {
            var aggregate = BatchProgressAggregator(mode: mode)
            aggregate.add(0, uploadTotal: 0)
            aggregate.add(1, uploadTotal: .max)
            aggregate.sizeFound(0, download: .max)
            aggregate.update(0, HTTPTransferProgress(bytesExpectedToSend: 0, bytesReceived: 10, bytesExpectedToReceive: .max))
            aggregate.update(1, HTTPTransferProgress(bytesSent: 5, bytesExpectedToSend: .max, bytesReceived: 1, bytesExpectedToReceive: 1))
            XCTAssertEqual(aggregate.value.bytesExpectedToReceive, .max)
            XCTAssertEqual(aggregate.value.bytesExpectedToSend, .max)
            XCTAssertEqual(aggregate.value.bytesReceived, 11)
            XCTAssertTrue((0...1).contains(aggregate.value.fractionCompleted))
        }
    }
}
