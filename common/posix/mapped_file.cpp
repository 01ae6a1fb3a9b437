// Read-only file mappings that survive truncation, on POSIX: see mapped_file.hpp. The SIGBUS
// handler only reads a fixed table of lock-free slots and calls mmap (a plain system call on
// Linux), so it is safe to run at any point of any thread. A SIGBUS outside every slot goes to the handler that
// was there before (or the default action: the process dies as it would have).
#include "common/mapped_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>

#include "common/posix/stat_times.hpp"
#include "common/unique_fd.hpp"

namespace ferry::posix {
namespace {

struct Slot {
  std::atomic<std::uintptr_t> begin{0}, end{0};  // end == 0: nothing for the handler here
  std::atomic<bool> hit{false};
  bool used = false;  // under slots_mu
};
constexpr std::size_t kSlots = 64;
std::array<Slot, kSlots> slots;
std::mutex slots_mu;  // taking and freeing slots (never in the handler)
struct sigaction previous {};

void on_sigbus(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (Slot& s : slots) {
    const std::uintptr_t end = s.end.load(std::memory_order_acquire);
    if (end == 0 || addr < s.begin.load(std::memory_order_acquire) || addr >= end) continue;
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    void* at = reinterpret_cast<void*>(addr & ~(page - 1));
    if (::mmap(at, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
      s.hit.store(true, std::memory_order_release);
      return;  // the read is retried and finds zeros
    }
    break;
  }
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) return previous.sa_sigaction(sig, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN && previous.sa_handler) {
    return previous.sa_handler(sig);
  }
  ::signal(SIGBUS, SIG_DFL);  // returning re-runs the faulting access, which now kills as before
}

// Ours unless someone installed another since (a library, a test framework): then ours again,
// passing on to theirs. Called with slots_mu held.
void install_handler() {
  struct sigaction now {};
  ::sigaction(SIGBUS, nullptr, &now);
  if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_sigbus) return;
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, &previous);
}

}  // namespace

std::expected<MappedFile, std::string> MappedFile::open(const std::filesystem::path& file) {
  const UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::unexpected(errno == ENOENT ? std::string("missing") : "cannot open " + file.string() + ": " + std::strerror(errno));
  auto m = map(fd.get());
  if (!m) return std::unexpected(file.string() + ": " + m.error());
  return m;
}

std::expected<MappedFile, std::string> MappedFile::map(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::unexpected(std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return std::unexpected(std::string("not a regular file"));
  MappedFile m;
  m.size_ = static_cast<std::size_t>(st.st_size);
  m.mtime_ns_ = mtime_of(st);
  if (m.size_ == 0) return m;
  {
    std::lock_guard lock(slots_mu);
    install_handler();
    for (std::size_t i = 0; i < kSlots; ++i)
      if (!slots[i].used) {
        slots[i].used = true;
        m.slot_ = static_cast<int>(i);
        break;
      }
  }
  if (m.slot_ < 0) return std::unexpected(std::string("too many files mapped at once"));
  m.mapped_ = m.size_;
  Slot& s = slots[static_cast<std::size_t>(m.slot_)];
  s.hit.store(false);
  // Populated at once: one pass through the page tables instead of a fault per few pages later.
  // (A page already gone is then simply not populated; reading it faults into the handler.)
  m.data_ = ::mmap(nullptr, m.mapped_, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (m.data_ == MAP_FAILED) {
    m.data_ = nullptr;
    const int e = errno;
    m.release();
    return std::unexpected(std::string("cannot map: ") + std::strerror(e));
  }
  s.begin.store(reinterpret_cast<std::uintptr_t>(m.data_), std::memory_order_release);
  s.end.store(reinterpret_cast<std::uintptr_t>(m.data_) + m.mapped_, std::memory_order_release);
  return m;
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(o.size_), mapped_(std::exchange(o.mapped_, 0)), mtime_ns_(o.mtime_ns_),
      slot_(std::exchange(o.slot_, -1)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = o.size_;
    mapped_ = std::exchange(o.mapped_, 0);
    mtime_ns_ = o.mtime_ns_;
    slot_ = std::exchange(o.slot_, -1);
  }
  return *this;
}

MappedFile::~MappedFile() { release(); }

void MappedFile::release() {
  if (slot_ >= 0) {
    std::lock_guard lock(slots_mu);
    slots[static_cast<std::size_t>(slot_)].end.store(0, std::memory_order_release);
    slots[static_cast<std::size_t>(slot_)].used = false;
    slot_ = -1;
  }
  if (data_) ::munmap(data_, mapped_);
  data_ = nullptr;
}

bool MappedFile::truncated() const {
  return slot_ >= 0 && slots[static_cast<std::size_t>(slot_)].hit.load(std::memory_order_acquire);
}

}  // namespace ferry::posix
