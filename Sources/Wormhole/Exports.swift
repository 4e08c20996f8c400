// One `import Wormhole` for users: the public types of the engine below the API (the error, the secure archive,
// escaping for display, a post's report, the statistics) are the library's, wherever the compiler keeps them.
@_exported import WormholeEngine
