public final class GroupNotificationCenter {}
