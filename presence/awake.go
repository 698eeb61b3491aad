package presence

// IsAwake reports whether an effective state ([Status.Effective]) is one of
// a running watcher with a fresh heartbeat: AWAKE/IDLE, AWAKE/WORKING,
// AWAKE/WAITING or AWAKE/THROTTLED. STALE, OFFLINE and anything else are
// not.
func IsAwake(effective string) bool {
	switch effective {
	case AwakeIdle, AwakeWorking, AwakeWaiting, AwakeThrottled, AwakeLive:
		return true
	}
	return false
}
