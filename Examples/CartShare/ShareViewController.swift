import UIKit

/// The share extension's principal class (`NSExtensionPrincipalClass` in its Info.plist): adds the shared text to
/// the cart, and closes.
final class ShareViewController: UIViewController {
    override func viewDidAppear(_ animated: Bool) {
        super.viewDidAppear(animated)
        let attachments = (extensionContext?.inputItems.first as? NSExtensionItem)?.attachments ?? []
        guard let provider = attachments.first(where: { $0.canLoadObject(ofClass: String.self) }) else {
            extensionContext?.completeRequest(returningItems: nil)
            return
        }
        _ = provider.loadObject(ofClass: String.self) { text, _ in
            Task { @MainActor in self.finish(adding: text ?? "") }
        }
    }

    private func finish(adding text: String) {
        do {
            try addSharedItem(text)
            extensionContext?.completeRequest(returningItems: nil)
        } catch {
            extensionContext?.cancelRequest(withError: error)
        }
    }
}
