// Where a prompt goes when slots may share a prefix (prefix_sharing.h).
#include <gtest/gtest.h>

#include "server/prefix_sharing.h"

namespace oscar::server {
namespace {

const std::vector<int32_t> kPrompt{1, 2, 3, 4, 5, 6, 7};

TEST(PlacePrompt, WithoutSharingIsChooseSlot) {
  const std::vector<int32_t> s0{1, 2, 3}, s1{1, 2, 3, 4, 5, 9};
  const Placement p = place_prompt({{true, &s0, 1}, {false, &s1, 2}}, kPrompt, false);
  EXPECT_EQ(p.slot, 0);
  EXPECT_EQ(p.keep, 3u);
  EXPECT_EQ(p.donor, -1);
  EXPECT_EQ(place_prompt({{false, &s0, 1}}, kPrompt, true).slot, -1);
}

TEST(PlacePrompt, ABusySlotsLongerPrefixIsShared) {
  const std::vector<int32_t> s0{1, 2, 3}, s1{1, 2, 3, 4, 5, 9}, s2{};
  const Placement p = place_prompt({{true, &s0, 1}, {false, &s1, 2}, {true, &s2, 3}}, kPrompt, true);
  EXPECT_EQ(p.slot, 0);  // the free slot with the most of its own
  EXPECT_EQ(p.donor, 1);
  EXPECT_EQ(p.shared, 5u);
  EXPECT_EQ(p.keep, 0u);
  // No longer prefix elsewhere: in place.
  const std::vector<int32_t> s3{1, 2};
  const Placement q = place_prompt({{true, &s0, 1}, {false, &s3, 2}}, kPrompt, true);
  EXPECT_EQ(q.slot, 0);
  EXPECT_EQ(q.keep, 3u);
  EXPECT_EQ(q.donor, -1);
}

TEST(PlacePrompt, AWholePromptCachedElsewhereLeavesItsLastTokenToEvaluate) {
  const std::vector<int32_t> s0{}, s1{1, 2, 3, 4, 5, 6, 7, 8};
  const Placement p = place_prompt({{true, &s0, 1}, {false, &s1, 2}}, kPrompt, true);
  EXPECT_EQ(p.donor, 1);
  EXPECT_EQ(p.shared, kPrompt.size() - 1);
}

TEST(PlacePrompt, AnIdleConversationIsNotCutWhenAnEmptySlotCanShare) {
  // Slot 0 holds another conversation that starts like the prompt; slot 1
  // is empty: the prompt goes there and shares slot 0's first 4 positions.
  const std::vector<int32_t> conv{1, 2, 3, 4, 8, 8, 8}, empty{};
  const Placement p = place_prompt({{true, &conv, 1}, {true, &empty, 2}}, kPrompt, true);
  EXPECT_EQ(p.slot, 1);
  EXPECT_EQ(p.donor, 0);
  EXPECT_EQ(p.shared, 4u);
  // No empty slot: slot 0 is cut back in place, as without sharing.
  const std::vector<int32_t> other{9, 9};
  const Placement q = place_prompt({{true, &conv, 1}, {true, &other, 2}}, kPrompt, true);
  EXPECT_EQ(q.slot, 0);
  EXPECT_EQ(q.keep, 4u);
  EXPECT_EQ(q.donor, -1);
  // The slot's cache is all prefix (a conversation's next turn): in place.
  const std::vector<int32_t> turn{1, 2, 3, 4};
  const Placement r = place_prompt({{true, &turn, 1}, {true, &empty, 2}}, kPrompt, true);
  EXPECT_EQ(r.slot, 0);
  EXPECT_EQ(r.keep, 4u);
  EXPECT_EQ(r.donor, -1);
}

TEST(PlacePrompt, TiesGoToTheMostRecentDonor) {
  const std::vector<int32_t> e{}, a{1, 2, 3, 9}, b{1, 2, 3, 8};
  const Placement p = place_prompt({{true, &e, 1}, {false, &a, 5}, {false, &b, 7}}, kPrompt, true);
  EXPECT_EQ(p.donor, 2);
  EXPECT_EQ(p.shared, 3u);
}

}  // namespace
}  // namespace oscar::server
