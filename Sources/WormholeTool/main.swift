import Foundation

/// What each command does and takes, as `wormhole help COMMAND` prints it.
let commandHelp: [(name: String, text: String)] = [
    ("listen", """
        usage: wormhole listen [NAME] [-c DIR | -g ID] [--create] [--object O] [-n|--count K] [--client ID] [--all]
          print each notification as one JSON line, {"name":…,"object":…,"userInfo":…}, of NAME or, without one, of
          every name but the library's own (group values' announcements, wormhole.value.*; requests and replies
          reach only who names them), which --all prints too; exit after K; with --client,
          as a durable listener that receives what was posted for it while it was not running. SIGTERM or SIGINT
          ends it cleanly. An integer prints as its digits, a real always with a fraction or an exponent (1.0,
          1e+16), NaN and the infinities as the strings "NaN", "Infinity" and "-Infinity"; data as base64, a date
          as ISO 8601 in UTC, 2024-02-29T12:00:00.250Z, the fraction only when not zero (outside the years 1 to
          9999, as its seconds since 2001). A dictionary two of whose keys
          print alike (the number 1 and the string "1") prints as an array of [key, value] pairs.
        """),
    ("post", """
        usage: wormhole post NAME [-c DIR | -g ID] [--create] [--object O] [--user-info JSON] [--retain] [--json]
          post one notification; print how many listeners got it and how many were spooled, as a line of text or
          with --json as one JSON line, {"container":…,"delivered":1,"failures":[{"code":…,"error":…,"pid":…}],
          "name":…,"object":…,"removed":0,"spooled":0} (exit 1 when failures is not empty); with --retain, also
          keep it as the current value of its name. --user-info is a JSON object (null is NSNull), @FILE reads
          it from a file, and - from standard input. Integers are exact from -2^63 to 2^64-1; past that, an error.
        """),
    ("retained", """
        usage: wormhole retained [-c DIR | -g ID] (NAME [--clear] | --list)
          print the current retained notification of N as one JSON line, as listen prints it (exit 1 if none),
          or forget it. --list prints the names that have one as one JSON line,
          {"container":…,"names":[…],"skipped":K}: names sorted by their UTF-8 bytes; K counts the files of
          retained/ that are not a whole retained notification (a FIFO, a link, damage), skipped and left in
          place, each named with why on standard error. Exit 0 whether or not some were skipped; 1 when the
          folder cannot be listed.
        """),
    ("value", """
        usage: wormhole value [-c DIR | -g ID] [--create] (NAME [--set JSON [--type date|data] | --reset] | --list)
          print the current value of the group value N as JSON (null when unset), set it, or reset it to unset
          (--reset, or --set null). A string needs its quotes: --set '"hello"'; null inside a value is nil, as a
          typed process stores it. Integers are exact from -2^63 to 2^64-1. JSON has no date or data: --type date
          reads --set as an ISO 8601 date, --type data as base64.
          A date is YYYY-MM-DDThh:mm:ss[.fraction](Z|±hh:mm|±hhmm), or YYYY-MM-DD (midnight UTC), in the years
          0001 to 9999 of the proleptic Gregorian calendar. Every field is checked: a day that does not exist
          (2023-02-29), 24:00:00, a leap second's 60 and a time without an offset are mistakes (exit 2), never
          moved to another day. A fraction keeps what a date holds (under a microsecond now, 30 in the year 9999).
          Values print as listen prints them: dates in UTC (...Z), the fraction only when not zero, which reads
          back as the same date. A value that was never set, or was reset, prints null. A stored value that
          cannot be read (damage: a version file changed, cut short or not a file; a later format) is a failure:
          exit 1, the reason on standard error, nothing printed (never null).
          --list prints the names of the values that are set (not unset or reset) as one JSON line,
          {"container":…,"names":[…],"skipped":K}, as retained --list does for values/: K counts the values
          skipped as damaged or not Wormhole's, each named with why on standard error. Exit 0 whether or not
          some were skipped; 1 when values/ cannot be listed.
        """),
    ("request", """
        usage: wormhole request NAME [-c DIR | -g ID] [--object O] [--user-info JSON] [--timeout S]
          ask the responders of N and print the first reply as one JSON line, as listen prints a notification;
          exit 1 when no process has a responder for N, or no reply comes within S seconds (default 5; from
          1e-9, a nanosecond, to 86400; anything else, not finite or not a number is a mistake, exit 2).
          --user-info is read as post reads it. A responder that is suspended, or durable and not
          running, answers when it runs again, if that is within S seconds.
        """),
    ("respond", """
        usage: wormhole respond NAME [-c DIR | -g ID] [--create] [--object O] [--reply JSON] [-n|--count K] [--client ID]
          answer each request for N with the userInfo --reply (read as post reads --user-info; none: a reply
          without one), printing each request as one JSON line; exit after K answers, or with --count 0 once
          the responder is registered. With --client, as a durable responder: requests made while it was not
          running wait in its spool and are answered on its next run, those whose timeout passed never.
        """),
    ("status", """
        usage: wormhole status [-c DIR | -g ID] [--json] [--clean] [--all]
          list the registered listeners: pid, socket, what they observe (a name of * is a pattern: every name),
          state, spool depth; with --json, as one JSON line. Only reads: a listener that is gone shows as gone
          (dead), and --clean first removes the entries of those (never a durable, stopped or busy one) and says
          how many. --no-clean, which older versions needed to only read, is taken and changes nothing. What a
          listener observes leaves out the library's own names (a responder's wormhole.request.*, a requester's
          wormhole.reply.*, group values' wormhole.value.*, a relay's wormhole.spooled), counted as hidden;
          --all shows them.
        """),
    ("forget", """
        usage: wormhole forget [-c DIR | -g ID] --client ID
          forget a durable identity: its registry entry and its spool, with what is spooled for it; refused while
          a process runs it
        """),
    ("bridge", """
        usage: wormhole bridge NAME... [-c DIR | -g ID] [--create] --server nats://[USER:PASSWORD@|TOKEN@]HOST[:PORT]
                               [--route NAME] [--retained NAME] [--value NAME] [--request NAME] [--subject-prefix P]
                               [--replicas 1|3|5]
          carry the notifications of each NAME (NAME* for every name that starts with NAME) between this
          container and the containers of other hosts whose bridges use the same NATS server (with JetStream) or
          cluster, until SIGTERM or SIGINT. Each notification reaches every other host once, in its poster's
          order, also after this bridge, the server or another host was down. --retained and --value keep a
          retained notification and a group value the same on every host, the last write winning; --request
          carries requests for NAME to responders on other hosts (noResponder at once when no host has one).
          Prints the bridge's status as one JSON line each time it changes, {"connection":"connected",
          "waiting":0,"sent":…,"posted":…,"values":…,"requestsSent":…,"requestsReceived":…,"duplicates":…,
          "dropped":…,"gapsFilled":…,"reconnects":…,"lastError":…}. --subject-prefix (default wormhole) keeps applications that share a server apart;
          --replicas sets how many servers of a cluster keep the streams when they are first made.
        """),
    ("demo", """
        usage: wormhole demo
          an app and an extension process talking through a temporary container
        """),
]

/// How every command but `demo` finds its container, appended to each one's help.
let containerHelp = """
      The container: -c DIR (--container DIR), a folder, or -g ID (--group ID), an App Group; without either,
      the environment's WORMHOLE_CONTAINER (a folder) or WORMHOLE_GROUP (a group identifier); an option wins over
      the environment, a variable set to nothing counts as unset. NAME may also be given as --name NAME (both
      only alike); after --, every argument is a name, also one that starts with -.
    """

/// What --create does, appended to the help of the commands that take it.
let createHelp = """
      --create makes a container folder that does not exist, with the folders above it that do not exist either,
      each mode 0700, and says each on standard error (wormhole: made /tmp/a (0700)); with -g, the library makes
      the group's default container. Without --create, a missing container is a mistake (exit 2).
    """

let usage = """
    usage: wormhole <command> [options]        wormhole help <command> | <command> --help

    commands:
      listen    print each notification as one JSON line
      post      post one notification
      retained  print, clear or list retained notifications
      value     print, set, reset or list group values
      request   ask the responders of a name and print the first reply
      respond   answer requests for a name
      status    list the registered listeners (only reads; --clean removes those that are gone)
      forget    forget a durable identity and its spool
      bridge    carry notifications to other hosts through a NATS server
      demo      an app and an extension process talking through a temporary container

    The container: -c DIR (--container DIR) or -g ID (--group ID); without either, $WORMHOLE_CONTAINER (a folder)
    or $WORMHOLE_GROUP (a group identifier). An option wins over the environment.
    Short forms: -c for --container, -g for --group, -n for --count (listen, respond), -h for --help.
    post, listen, value and respond refuse a container folder that does not exist unless given --create (which
    makes missing folders above it too, each 0700, and says so); the others never make one.
    listen, retained, value, request and respond print JSON always; status and post print text, or JSON with --json.
    status and listen leave out the library's own names (wormhole.request.*, wormhole.reply.*, wormhole.value.*,
    wormhole.spooled) unless --all.
    Exit status: 0 success, 1 failure, 2 a mistake in the command line (one line on standard error says which).
    """

let toolVersion = "0.1.0-dev"

/// The commands a mistyped one is compared with.
let commandNames = commandHelp.map(\.name) + ["help"]

/// The help of `command`: its text, then how it finds its container and what --create does where it takes it.
func help(for command: String) -> String? {
    guard let text = commandHelp.first(where: { $0.name == command })?.text else { return nil }
    guard command != "demo" else { return text }
    return text + "\n" + containerHelp + (["post", "listen", "value", "respond", "bridge"].contains(command) ? "\n" + createHelp : "")
}

/// "unknown command 'lisen'; did you mean listen?" when one is near.
func unknownCommand(_ typed: String) -> String {
    let hint = Suggestion.nearest(to: typed, among: commandNames).map { "; did you mean \($0)?" } ?? ""
    return "wormhole: unknown command '\(typed)'\(hint) (see 'wormhole help')"
}

let arguments = CommandLine.arguments.dropFirst()
let command = arguments.first ?? ""
do {
    // CommandLine.arguments has every byte that is not UTF-8 replaced by U+FFFD: a name or value typed in
    // another encoding would be posted changed. Told from the bytes the process was given.
    for index in 1..<Int(CommandLine.argc) {
        guard let argument = CommandLine.unsafeArgv[index] else { continue }
        _ = try JSONValue.utf8Text(UnsafeBufferPointer(start: argument, count: strlen(argument)).lazy.map { UInt8(bitPattern: $0) },
                                   from: "argument \(index)")
    }
    switch command {
    case "listen": try Commands.listen(arguments.dropFirst())
    case "post": exit(try Commands.post(arguments.dropFirst()))
    case "request": exit(try Commands.request(arguments.dropFirst()))
    case "respond": try Commands.respond(arguments.dropFirst())
    case "status": exit(try Commands.status(arguments.dropFirst()))
    case "retained": exit(try Commands.retained(arguments.dropFirst()))
    case "value": exit(try Commands.value(arguments.dropFirst()))
    case "forget": exit(try Commands.forget(arguments.dropFirst()))
    case "bridge": try Commands.bridge(arguments.dropFirst())
    case "demo": exit(try Demo.run(arguments.dropFirst()))
    case "demo-extension": try Demo.runExtension(arguments.dropFirst())
    case "help", "--help", "-h":
        guard let topic = arguments.dropFirst().first else {
            Output.ownText(usage)
            exit(0)
        }
        guard let text = help(for: topic) else {
            Output.error(unknownCommand(topic))
            exit(2)
        }
        Output.ownText(text)
        exit(0)
    case "--version", "version":
        Output.ownText("wormhole \(toolVersion)")
        exit(0)
    case "":
        Output.error("wormhole: give a command: listen, post, retained, value, request, respond, status, forget, bridge or demo (see 'wormhole help')")
        exit(2)
    default:
        Output.error(unknownCommand(command))
        exit(2)
    }
} catch let error as UsageError {
    if error.isHelp {
        Output.ownText(help(for: command) ?? usage)
        exit(0)
    }
    Output.error("wormhole \(command): \(error) (see 'wormhole \(command) --help')")
    exit(2)
} catch {
    // A failure of the operation, ToolFailure or what the library threw: one line, exit status 1.
    Output.error("wormhole \(command): \(error)")
    exit(1)
}
