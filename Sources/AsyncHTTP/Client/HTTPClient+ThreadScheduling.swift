extension HTTPClient {
    /// How Linux schedules the threads on which requests resume after waiting for their sockets.
    ///
    /// A request that waits for its response parks its task; the library's event loop thread resumes it when
    /// the socket is ready, and the Swift runtime runs it on one of its cooperative-pool threads. When every
    /// processor is busy, the runtime's wake-up of that thread preempts whatever runs on the processor: the
    /// server, when it shares the machine, or the pool's other thread, which the runtime woke a moment before
    /// to share the same burst of responses. Each preemption is two more thread switches, and the switched-out
    /// thread finds less to do when it comes back.
    ///
    /// ``batch`` puts those threads under `SCHED_BATCH`. A batch thread keeps its fair share of processor time
    /// (the same weight as an ordinary one); only its wake-up no longer preempts: it takes an idle processor
    /// at once, and otherwise runs when the running thread blocks or its time slice ends, and then finds more
    /// tasks ready. With 32 concurrent keep-alive GETs on two processors shared with the server, it raised the
    /// rate by about a third and cut the client's CPU per request from 20–24 to 15–16 µs (docs/performance.md,
    /// session 21); with one request at a time or 256 in flight the rates did not move, and new TLS
    /// connections, alone in flight, ran 2–6 % slower. The library's own event loop thread always runs as a
    /// batch thread, for the same reason.
    ///
    /// It is not the default, because the threads are not the library's: the cooperative pool runs every task
    /// of the process, so under ``batch`` a task of yours that a timer or another task resumes, while every
    /// processor is busy, also waits for the running thread's slice instead of preempting it. Turn it on in a
    /// program that wants throughput from many concurrent requests on few processors (a crawler, a gateway, a
    /// load generator, a batch job) and can take a wake-up delay of up to a time slice (a few milliseconds)
    /// when the machine is saturated.
    public enum ThreadScheduling: Sendable, Hashable {
        /// The threads keep the policy they have (the default). A pool thread found under `SCHED_BATCH` only
        /// because the event loop thread created it, and so inherited the loop's policy, is put back to
        /// `SCHED_OTHER`.
        case unchanged
        /// Every thread a request's task resumes on after a wait, and that runs under `SCHED_OTHER`, is put
        /// under `SCHED_BATCH` from then on. A thread under a real-time or idle policy is left as it is.
        /// Usually these are the Swift runtime's cooperative-pool threads; under a task executor preference,
        /// they are that executor's threads.
        case batch
    }

    /// How the threads requests resume on are scheduled, for the whole process: ``ThreadScheduling/unchanged``
    /// unless set.
    ///
    /// Process-wide, because the threads are shared by every client and every task. Set it once, early (in
    /// `main`, before the first request). A thread is changed the first time a request resumes on it after
    /// the setting. Setting ``ThreadScheduling/unchanged`` again puts every thread that
    /// ``ThreadScheduling/batch`` changed back to `SCHED_OTHER` at once.
    ///
    /// ```swift
    /// HTTPClient.threadScheduling = .batch
    /// try await withThrowingTaskGroup(of: Int.self) { group in
    ///     for url in urls { group.addTask { try await HTTPClient.shared.send(.init(url: url)).status.code } }
    ///     for try await _ in group {}
    /// }
    /// ```
    public static var threadScheduling: ThreadScheduling {
        get { IOBackend.threadScheduling }
        set { IOBackend.threadScheduling = newValue }
    }
}
