import Foundation

let usage = """
    usage: wormhole <command> [options]
      listen (--group ID | --container DIR) [--name N] [--object O] [--count K] [--client ID]
            print each notification as one JSON line; exit after K; with --client, as a durable
            listener that receives what was posted for it while it was not running
      post   (--group ID | --container DIR) --name N [--object O] [--user-info '<JSON object>'] [--retain]
            post one notification; print how many listeners got it and how many were spooled;
            with --retain, also keep it as the current value of its name
      retained (--group ID | --container DIR) --name N [--clear]
            print the current retained notification of N as one JSON line (exit 1 if none), or forget it
      value  (--group ID | --container DIR) --name N [--set '<JSON>']
            print the current value of the group value N as JSON (null when unset), or set it
            (dates print as ISO 8601 strings and data as base64, as listen prints them)
      status (--group ID | --container DIR) [--json]
            list the registered listeners: pid, socket, what they observe, state, spool depth
      demo  an app and an extension process talking through a temporary container
    """

let arguments = CommandLine.arguments.dropFirst()
do {
    switch arguments.first {
    case "listen": try Commands.listen(arguments.dropFirst())
    case "post": exit(try Commands.post(arguments.dropFirst()))
    case "status": exit(try Commands.status(arguments.dropFirst()))
    case "retained": exit(try Commands.retained(arguments.dropFirst()))
    case "value": exit(try Commands.value(arguments.dropFirst()))
    case "demo": exit(try Demo.run(arguments.dropFirst()))
    case "demo-extension": try Demo.runExtension(arguments.dropFirst())
    case "help", "--help", "-h": Output.ownText(usage); exit(0)
    default:
        Output.ownText(usage, toError: true)
        exit(2)
    }
} catch let error as UsageError {
    Output.error("wormhole: \(error)")
    Output.ownText("\n" + usage, toError: true)
    exit(2)
} catch {
    Output.error("wormhole: \(error)")
    exit(1)
}
