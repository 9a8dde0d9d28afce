// SPDX-License-Identifier: GPL-2.0
#include "address_table.hpp"

#include <gtest/gtest.h>

#include <atomic>
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
	OwnedTable table;
	Retired retired;
	constexpr size_t count = 4096;
	std::vector<Site> sites(count);
	for (size_t i = 0; i < count; ++i)
		sites[i].address = 0xffffffff81000000 + 5 * (i + 1);
	std::atomic<bool> stop{false};
	std::atomic<long> wrong{0}, found{0};
	auto reader = [&] {
		size_t i = 0;
		while (!stop.load(std::memory_order_relaxed)) {
			const uint64_t address = sites[i++ % count].address;
			if (Site *s = table.lookup(address)) {
				found.fetch_add(1, std::memory_order_relaxed);
				if (s->address != address)
					wrong.fetch_add(1);
			}
		}
	};
	std::thread readers[2] = {std::thread(reader), std::thread(reader)};
	for (int round = 0; round < 20; ++round) {
		for (Site &s : sites)
			ASSERT_TRUE(table.insert(s.address, &s, Retired::retire, &retired));
		for (size_t i = 0; i < count; i += 2)
			ASSERT_EQ(table.remove(sites[i].address), &sites[i]);
		for (size_t i = 1; i < count; i += 2)
			ASSERT_EQ(table.remove(sites[i].address), &sites[i]);
	}
	stop = true;
	for (std::thread &t : readers)
		t.join();
	EXPECT_EQ(wrong.load(), 0);
	EXPECT_GT(found.load(), 0);
}

} // namespace
