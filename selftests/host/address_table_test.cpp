// SPDX-License-Identifier: GPL-2.0
#include "address_table.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

namespace {

struct Site {
	uint64_t address;
};
using Table = okp::AddressTable<Site>;

// Retired storage is kept until the test ends: the "grace period" is the
// end of every reader.
struct Retired {
	std::vector<Table::Storage *> storages;
	~Retired()
	{
		for (Table::Storage *s : storages)
			Table::free_storage(s);
	}
	static void retire(Table::Storage *old, void *context)
	{
		static_cast<Retired *>(context)->storages.push_back(old);
	}
};

struct OwnedTable : Table {
	~OwnedTable() { destroy(); }
};

TEST(AddressTable, InsertLookupRemove)
{
	OwnedTable table;
	Retired retired;
	Site a{0xffffffff81000010}, b{0xffffffff81000020};
	EXPECT_EQ(table.lookup(a.address), nullptr);
	ASSERT_TRUE(table.insert(a.address, &a, Retired::retire, &retired));
	ASSERT_TRUE(table.insert(b.address, &b, Retired::retire, &retired));
	EXPECT_FALSE(table.insert(a.address, &b, Retired::retire, &retired)); // already present
	EXPECT_FALSE(table.insert(0, &b, Retired::retire, &retired));
	EXPECT_EQ(table.lookup(a.address), &a);
	EXPECT_EQ(table.lookup(b.address), &b);
	EXPECT_EQ(table.lookup(a.address + 1), nullptr);
	EXPECT_EQ(table.size(), 2u);

	EXPECT_EQ(table.remove(a.address), &a);
	EXPECT_EQ(table.remove(a.address), nullptr);
	EXPECT_EQ(table.lookup(a.address), nullptr);
	EXPECT_EQ(table.lookup(b.address), &b);				     // the chain past a's tombstone holds
	ASSERT_TRUE(table.insert(a.address, &a, Retired::retire, &retired)); // reuses the tombstone
	EXPECT_EQ(table.lookup(a.address), &a);
	EXPECT_EQ(table.size(), 2u);
}

TEST(AddressTable, GrowsAndRetiresOldStorage)
{
	OwnedTable table;
	Retired retired;
	std::vector<Site> sites(1000);
	for (size_t i = 0; i < sites.size(); ++i) {
		sites[i].address = 0xffffffff81000000 + 3 * i; // dense, like instructions
		ASSERT_TRUE(table.insert(sites[i].address, &sites[i], Retired::retire, &retired));
	}
	EXPECT_GE(table.capacity(), 1024u);
	EXPECT_FALSE(retired.storages.empty());
	for (const Site &s : sites)
		EXPECT_EQ(table.lookup(s.address), &s);
	size_t visited = 0;
	table.for_each([&](Site *) { ++visited; });
	EXPECT_EQ(visited, sites.size());
}

TEST(AddressTable, TombstonesDoNotFillTheTable)
{
	// Insert and remove many distinct addresses: rebuilding drops
	// tombstones, so the table neither fills up nor grows without bound.
	OwnedTable table;
	Retired retired;
	Site s{0};
	for (uint64_t i = 1; i <= 100000; ++i) {
		s.address = 0xffffffff81000000 + i;
		ASSERT_TRUE(table.insert(s.address, &s, Retired::retire, &retired));
		ASSERT_EQ(table.remove(s.address), &s);
	}
	EXPECT_EQ(table.size(), 0u);
	EXPECT_LE(table.capacity(), 64u);
}

TEST(AddressTable, ReadersNeverSeeAWrongEntry)
{
	// Readers hammer lookups while the writer inserts, removes and grows.
	// A reader may miss an entry in flight, but whatever it finds must be
	// the entry for that address, and memory must stay valid (ASan).
	//
	// The writer goes on until each reader has made enough lookups
	// while it wrote: on a loaded 2-core host (ctest -j2 beside guests)
	// a fixed number of rounds once ended before a reader ran at all,
	// and "found nothing" failed the test (CI, stop 62).
	OwnedTable table;
	Retired retired;
	constexpr size_t count = 4096;
	constexpr long enough_lookups = 200000;
	std::vector<Site> sites(count);
	for (size_t i = 0; i < count; ++i)
		sites[i].address = 0xffffffff81000000 + 5 * (i + 1);
	std::atomic<bool> writing{true};
	std::atomic<long> wrong{0}, found{0}, lookups[2] = {0, 0};
	auto reader = [&](std::atomic<long> &mine) {
		size_t i = 0;
		while (writing.load(std::memory_order_relaxed)) {
			const uint64_t address = sites[i++ % count].address;
			if (Site *s = table.lookup(address)) {
				found.fetch_add(1, std::memory_order_relaxed);
				if (s->address != address)
					wrong.fetch_add(1);
			}
			mine.fetch_add(1, std::memory_order_relaxed);
		}
	};
	std::thread readers[2] = {std::thread(reader, std::ref(lookups[0])), std::thread(reader, std::ref(lookups[1]))};
	auto readers_had_enough = [&] {
		return lookups[0].load() >= enough_lookups && lookups[1].load() >= enough_lookups;
	};
	bool whole = true;
	int rounds = 0;
	// At least 20 rounds; a minute at most, so a reader that never runs
	// fails the test rather than hanging it.
	const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
	for (; whole && (rounds < 20 || !readers_had_enough()) && std::chrono::steady_clock::now() < deadline;
	     ++rounds) {
		for (Site &s : sites)
			whole = whole && table.insert(s.address, &s, Retired::retire, &retired);
		for (size_t i = 0; i < count; i += 2)
			whole = whole && table.remove(sites[i].address) == &sites[i];
		for (size_t i = 1; i < count; i += 2)
			whole = whole && table.remove(sites[i].address) == &sites[i];
	}
	writing = false;
	for (std::thread &t : readers)
		t.join();
	EXPECT_TRUE(whole) << "an insert or remove failed in round " << rounds;
	EXPECT_TRUE(readers_had_enough()) << "readers made " << lookups[0].load() << " and " << lookups[1].load()
					  << " lookups in " << rounds << " rounds";
	EXPECT_EQ(wrong.load(), 0);
	EXPECT_GT(found.load(), 0);
}

} // namespace
