import Foundation
import Testing
import Wormhole

@Suite("Errors as NSError")
struct ErrorDomainTests {
    @Test("an error bridged to NSError carries the library's domain, whichever module holds its type")
    func domainIsTheLibrarys() {
        let error = WormholeError(.timedOut, "no reply in time") as NSError
        #expect(error.domain == "Wormhole.WormholeError")
        #expect(WormholeError.errorDomain == "Wormhole.WormholeError")
    }
}
