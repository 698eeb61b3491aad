// Package channel reads and writes collab messages: one immutable JSON file
// per message in ROOT/channels/CHANNEL (docs/protocol.md#messages).
//
// # Files
//
// A message file is named msg-YYYYMMDD-HHMMSS-AGENT-HEX4.json (UTC), equal
// to the message id plus ".json". [Writer.Post] publishes it atomically and
// never replaces an existing file (see package safedir); a same-second clash
// picks a new HEX4. Messages are never modified after they appear.
//
// # Reading
//
// [Reader] scans a channel incrementally and returns each message once. It
// is built for several hosts writing one directory over NFS:
//
//   - Its cursor is a set of names, not the last name seen: a message whose
//     name is older than ones already returned (a writer with a slow clock)
//     is still returned, as long as it is no older than the skew window
//     ([DefaultSkewWindow]) behind the newest name.
//   - A file that does not parse is retried on later scans
//     ([ReaderOptions.Retries]) before it is reported malformed: a foreign
//     writer may be writing in place, and an NFS attribute cache can show a
//     short read. A malformed file is read again if its size or mtime
//     changes.
//   - Dot-files and *.tmp files (in-flight writes) are ignored silently.
//     Names that do not match, directories, symlinks (never followed), other
//     non-regular files and files over the size limit are skipped and
//     reported once. An unreadable file is reported once and picked up when
//     it becomes readable. A skip is never fatal.
//   - The channel's archive folder, archive/YYYY-MM/ ([Archive]), is not
//     part of the channel: readers pass over it, and [ReadArchive] reads it.
//
// # Leniency
//
// Other writers are treated liberally: only "from" and "content.text" are
// required. A missing id, timestamp or session_id is taken from the file
// name and folder, a missing "to" means "all" and a missing "type" means
// "chat". Unknown fields, at the top level and in content and metadata, are
// kept and written back unchanged.
package channel
