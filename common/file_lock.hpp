// An advisory, whole-file exclusive lock held through a descriptor, released when it closes (or
// the process dies): the per-project sync lock. POSIX: flock(2). Windows: LockFileEx on one byte
// far past any content, so the holder's note in the file stays readable to those who wait.
#pragma once

namespace ferry::posix {

// Takes the lock without waiting: 0, EWOULDBLOCK when another descriptor holds it, else the errno.
int try_lock_exclusive(int fd);

}  // namespace ferry::posix
