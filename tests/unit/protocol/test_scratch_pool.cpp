// ScratchPool: a buffer given back is the next one taken (its pages already in), idle buffers
// are capped, and clear() frees them.
#define BOOST_TEST_MODULE scratch_pool
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "protocol/scratch_pool.hpp"

using ferry::protocol::ScratchPool;

BOOST_AUTO_TEST_CASE(a_buffer_given_back_is_taken_again_with_its_bytes) {
  ScratchPool pool;
  const std::uint8_t* first = nullptr;
  {
    auto lease = pool.take();
    BOOST_TEST(lease.get().empty());
    lease.get().resize(8u << 20);
    first = lease.get().data();
  }
  BOOST_TEST(pool.idle() == 1u);
  auto again = pool.take();
  BOOST_TEST(again.get().size() == (8u << 20));
  BOOST_TEST(again.get().data() == first);
  BOOST_TEST(pool.idle() == 0u);
}

BOOST_AUTO_TEST_CASE(leases_held_at_once_get_their_own_buffers) {
  ScratchPool pool;
  {
    auto a = pool.take();
    auto b = pool.take();
    a.get().assign(10, 1);
    b.get().assign(20, 2);
    BOOST_TEST(a.get().data() != b.get().data());
  }
  BOOST_TEST(pool.idle() == 2u);
}

BOOST_AUTO_TEST_CASE(an_empty_buffer_is_not_kept) {
  ScratchPool pool;
  { auto lease = pool.take(); }
  BOOST_TEST(pool.idle() == 0u);
}

BOOST_AUTO_TEST_CASE(idle_buffers_are_capped_and_cleared) {
  ScratchPool pool(2);
  {
    std::vector<ScratchPool::Lease> held;
    held.reserve(5);
    for (int i = 0; i < 5; ++i) {
      held.emplace_back(pool.take());
      held.back().get().resize(4096);
    }
  }
  BOOST_TEST(pool.idle() == 2u);
  pool.clear();
  BOOST_TEST(pool.idle() == 0u);
  BOOST_TEST(pool.take().get().empty());
}

BOOST_AUTO_TEST_CASE(threads_share_one_pool) {
  ScratchPool pool(4);
  std::atomic<int> shared{0};
  std::vector<std::jthread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&pool, &shared, t] {
      for (int i = 0; i < 1000; ++i) {
        auto lease = pool.take();
        lease.get().assign(4096, static_cast<std::uint8_t>(t));
        std::this_thread::yield();
        for (auto b : lease.get())
          if (b != static_cast<std::uint8_t>(t)) ++shared;  // another lease wrote into this buffer
      }
    });
  threads.clear();
  BOOST_TEST(shared == 0);
  BOOST_TEST(pool.idle() <= 4u);
  BOOST_TEST(pool.idle() >= 1u);
}
