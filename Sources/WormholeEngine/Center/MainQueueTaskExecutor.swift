import Dispatch

/// The task executor of the main actor's drain (``ObserverQueue/onActor(of:serialQueue:convert:)``): runs each job
/// of that task on the main queue, as the main actor, whose executor the main queue is.
///
/// A parked drain (``ObserverQueue/park(on:)``) resumes through a continuation, which Swift enqueues on the task's
/// executor for code of no actor: without a task executor, the global pool, whose thread is woken only to hop from
/// there to the main actor, a second job. With this one, resuming costs one block on the main queue, as
/// `DispatchQueue.main.async` does, and the drain goes on there with no hop.
final class MainQueueTaskExecutor: TaskExecutor {
    static let shared = MainQueueTaskExecutor()

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        DispatchQueue.main.async {
            // On the main queue, the main actor's executor: nothing else of the main actor runs meanwhile.
            job.runSynchronously(isolatedTo: MainActor.sharedUnownedExecutor, taskExecutor: executor)
        }
    }
}
