// Where Objective-C exists, objects that Foundation autoreleases on a thread are freed only when that thread's
// pool drains; a receive thread that runs for the process's life would drain only at its end. So each of its
// rounds, and each batch of deliveries, runs in a pool of its own. Elsewhere there is nothing to drain.
#if canImport(ObjectiveC)
import ObjectiveC
#endif

/// Runs `body` in an autorelease pool of its own where Objective-C exists, and simply runs it elsewhere.
@inline(__always)
func withAutoreleasePool<Result>(_ body: () -> Result) -> Result {
    #if canImport(ObjectiveC)
    return autoreleasepool(invoking: body)
    #else
    return body()
    #endif
}
