//===- MergePlannerTest.cpp - gradient-merge planners ---------------------===//
//
// The planners against hand-computed cases, MG-WFBP against its authors'
// formulation of the rule, and, on random small instances, the optimal plan
// against brute force over every contiguous grouping.
//
//===----------------------------------------------------------------------===//

#include "dtrain/Dist/MergePlanner.h"

#include <gtest/gtest.h>

#include <random>

using namespace mlir::dtrain::dist;

namespace {

std::vector<unsigned> asVector(llvm::ArrayRef<unsigned> plan) {
  return std::vector<unsigned>(plan.begin(), plan.end());
}

double cost(llvm::ArrayRef<GradientTask> tasks, llvm::ArrayRef<unsigned> plan,
            AllReduceCost model) {
  return planEnd(tasks, plan, model);
}

/// Every one of the 2^(n-1) contiguous groupings.
std::vector<MergePlan> allPlans(unsigned n) {
  std::vector<MergePlan> plans;
  for (uint32_t cuts = 0; cuts < (1u << (n - 1)); ++cuts) {
    MergePlan plan;
    for (unsigned i = 0; i + 1 < n; ++i)
      if (cuts & (1u << i))
        plan.push_back(i + 1);
    plan.push_back(n);
    plans.push_back(plan);
  }
  return plans;
}

TEST(MergePlanner, SimulateHandComputed) {
  // Ready at 1, 3, 4; startup 0.5 s, 0.1 s per byte.
  const GradientTask tasks[] = {{10, 1}, {20, 2}, {5, 1}};
  const AllReduceCost model{0.5, 0.1};
  // Separately: [1, 2.5], [3, 5.5], [5.5, 6.5].
  PlanTimeline each = simulatePlan(tasks, planEachGradient(3), model);
  EXPECT_EQ(std::vector<double>(each.starts.begin(), each.starts.end()),
            (std::vector<double>{1, 3, 5.5}));
  EXPECT_DOUBLE_EQ(each.commEnd(), 6.5);
  // One bucket at 4: 4 + 0.5 + 3.5 = 8.
  EXPECT_DOUBLE_EQ(cost(tasks, {3}, model), 8);
  // [0, 1] at 3 (3 + 0.5 + 3 = 6.5), then [2] at 6.5: 7.5.
  EXPECT_DOUBLE_EQ(cost(tasks, {2, 3}, model), 7.5);
}

// Timed all-reduces bound the line from below: flat under the first size,
// interpolated between sizes, extrapolated along the last segment.
TEST(MergePlanner, CostNeverBelowTimedAllReduces) {
  AllReduceCost model{1, 0.01, {{100, 1.5}, {200, 2}, {400, 8}}};
  EXPECT_DOUBLE_EQ(model.time(10), 1.5);       // line 1.1, flat 1.5
  EXPECT_DOUBLE_EQ(model.time(150), 2.5);      // line 2.5, table 1.75
  EXPECT_DOUBLE_EQ(model.time(300), 5);        // line 4, table 5
  EXPECT_DOUBLE_EQ(model.time(600), 14);       // line 7, 8 + 0.03 * 200
  EXPECT_DOUBLE_EQ(AllReduceCost({1, 0.01, {}}).time(600), 7);
  // Two gradients 10 ms apart: on the line one bucket ends first (0.01 +
  // 0.14 s against 0.12 + 0.12 s); when 400 bytes were timed at 1 s, two
  // exchanges do (0.24 s against 1.01 s).
  const GradientTask tasks[] = {{200, 0}, {200, 0.01}};
  EXPECT_EQ(asVector(planOptimal(tasks, {0.1, 0.0001})),
            (std::vector<unsigned>{2}));
  EXPECT_EQ(
      asVector(planOptimal(tasks, {0.1, 0.0001, {{200, 0.12}, {400, 1}}})),
      (std::vector<unsigned>{1, 2}));
}

TEST(MergePlanner, ThresholdBuckets) {
  const double MB = 1 << 20;
  const GradientTask tasks[] = {{0.5 * MB, 0}, {0.75 * MB, 0}, {10 * MB, 0},
                                {20 * MB, 0},  {30 * MB, 0},   {1 * MB, 0}};
  // PyTorch DDP: a 1 MB first bucket, then 25 MB buckets.
  EXPECT_EQ(asVector(planThreshold(tasks, 25 * MB, 1 * MB)),
            (std::vector<unsigned>{2, 4, 5, 6}));
  // Horovod: 128 MB, so everything in one bucket.
  EXPECT_EQ(asVector(planThreshold(tasks, 128 * MB)),
            (std::vector<unsigned>{6}));
  EXPECT_EQ(asVector(planThreshold(tasks, 0)),
            asVector(planEachGradient(6)));
}

TEST(MergePlanner, MGWFBPRule) {
  // Startup 1 s, nothing per byte. Gradient 1 is ready 0.5 s after the
  // first exchange could start (< startup): merged. Gradient 2 comes 9.5 s
  // later: its own bucket.
  const GradientTask tasks[] = {{4, 0}, {4, 0.5}, {4, 9.5}};
  EXPECT_EQ(asVector(planMGWFBP(tasks, {1, 0})),
            (std::vector<unsigned>{2, 3}));
  // With a startup of 0.1 s nothing is merged.
  EXPECT_EQ(asVector(planMGWFBP(tasks, {0.1, 0})),
            (std::vector<unsigned>{1, 2, 3}));
  // A gradient ready while the previous exchange still runs joins the
  // bucket that waits for the network (it cannot start earlier anyway).
  const GradientTask busy[] = {{100, 0}, {1, 2}, {1, 2}};
  EXPECT_EQ(asVector(planMGWFBP(busy, {1, 0.1})),
            (std::vector<unsigned>{1, 3}));
}

/// MG-WFBP as its authors' code states it (HKBU-HPML/MG-WFBP,
/// `_generate_groups_mgwfbp`), written independently of planMGWFBP: layers
/// in forward order (layer l's gradient is gradient L-1-l here), layer l's
/// backward starts at taob[l], its exchange at taoc[l] = max(taoc[l+1] +
/// tc[l+1], taob[l] + tb[l]); walking from the last layer, layer l is held
/// for layer l-1's exchange (tc[l] = 0, its size and cost moved to l-1, and
/// taoc recomputed) when l-1 is ready before l's exchange would end and
/// either l's exchange has not started by then or would wait for it less
/// than the startup.
MergePlan publishedMGWFBP(llvm::ArrayRef<GradientTask> tasks,
                          AllReduceCost cost) {
  const size_t layers = tasks.size();
  std::vector<double> tb(layers), size(layers), tc(layers), taob(layers),
      taoc(layers);
  for (size_t l = 0; l < layers; ++l) {
    tb[l] = tasks[layers - 1 - l].backwardSeconds;
    size[l] = tasks[layers - 1 - l].bytes;
    tc[l] = cost.time(size[l]);
  }
  // Gradient 0's backward time runs from the start of the backward pass.
  taob[layers - 1] = 0;
  for (size_t l = layers - 1; l-- > 0;)
    taob[l] = taob[l + 1] + tb[l + 1];
  auto commStarts = [&] {
    taoc[layers - 1] = taob[layers - 1] + tb[layers - 1];
    for (size_t l = layers - 1; l-- > 0;)
      taoc[l] = std::max(taoc[l + 1] + tc[l + 1], taob[l] + tb[l]);
  };
  commStarts();
  std::vector<bool> heldForNext(layers, false);
  for (size_t l = layers - 1; l >= 1; --l) {
    const double nextReady = taob[l - 1] + tb[l - 1];
    if (nextReady >= taoc[l] + tc[l])
      continue;
    if (taoc[l] > nextReady || nextReady - taoc[l] < cost.startup) {
      size[l - 1] += size[l];
      size[l] = 0;
      tc[l] = 0;
      tc[l - 1] = cost.time(size[l - 1]);
      heldForNext[l] = true;
      commStarts();
    }
  }
  // A bucket closes at each layer that is not held (gradient L-1-l).
  MergePlan plan;
  for (size_t l = layers; l-- > 0;)
    if (!heldForNext[l])
      plan.push_back(unsigned(layers - l));
  return plan;
}

// planMGWFBP against the published formulation on the authors' own fitted
// all-reduce models (their code's alpha and beta, seconds and seconds per
// byte, for 2-16 workers on 56 Gb InfiniBand and 10 GbE) with layer sizes
// and backward times spread like a CNN's, and on random models.
TEST(MergePlanner, MGWFBPMatchesThePublishedRule) {
  const AllReduceCost published[] = {
      {2.554691138304671e-06, 9.837548167872609e-11},  // 2 workers
      {4.204298980348825e-05, 2.0589360830118177e-10}, // 4 workers
      {9.75367204301171e-05, 3.0568230536676206e-10},  // 8 workers, IB
      {0.00023583677659915685, 4.0594787739537565e-10}, // 16 workers, IB
      {0.0005230272768511732, 8.570746975492128e-10},  // 8 workers, 10 GbE
      {0.0009080981007148093, 7.395651186836712e-10},  // 16 workers, 10 GbE
  };
  std::mt19937 rng(11141);
  std::uniform_int_distribution<unsigned> count(1, 160);
  std::lognormal_distribution<double> bytes(11, 3), backward(-8, 1.5);
  std::uniform_real_distribution<double> startup(1e-6, 5e-3),
      perByte(1e-11, 1e-8);
  unsigned merged = 0, instances = 0;
  for (int trial = 0; trial < 600; ++trial) {
    std::vector<GradientTask> tasks(count(rng));
    for (GradientTask &task : tasks)
      task = {4 * std::floor(bytes(rng)), backward(rng)};
    const AllReduceCost model =
        trial % 2 ? published[trial / 2 % std::size(published)]
                  : AllReduceCost{startup(rng), perByte(rng)};
    const MergePlan plan = planMGWFBP(tasks, model);
    ASSERT_EQ(asVector(plan), asVector(publishedMGWFBP(tasks, model)))
        << "trial " << trial;
    merged += plan.size() < tasks.size();
    ++instances;
  }
  // The instances exercise the rule: most merge something, not everything.
  EXPECT_GT(merged, instances / 2);
}

// The greedy rule is not optimal under its own model: it keeps merging
// small late gradients into the large first one, whose exchange then waits
// for all of them; sending the large one at once and the small ones
// together afterwards ends sooner.
TEST(MergePlanner, GreedyCanBeWorseThanOptimal) {
  const GradientTask tasks[] = {{5, 0}, {0, 0.9}, {0, 0.9}, {0, 0.9}};
  const AllReduceCost model{1, 1};
  const MergePlan greedy = planMGWFBP(tasks, model);
  const MergePlan optimal = planOptimal(tasks, model);
  EXPECT_EQ(asVector(greedy), (std::vector<unsigned>{4}));
  EXPECT_DOUBLE_EQ(cost(tasks, greedy, model), 2.7 + 1 + 5);
  EXPECT_EQ(asVector(optimal), (std::vector<unsigned>{1, 4}));
  EXPECT_DOUBLE_EQ(cost(tasks, optimal, model), 7);
}

// When the exchanges hide behind the backward pass, many plans end at the
// same time: each gradient alone ends at 4.018 s, and so do the first
// three merged (3 + 0.034 s, before the last is ready at 4). The optimal
// plan is the one with the fewest buckets; merging all four would end at
// 4.042 s.
TEST(MergePlanner, OptimalTakesTheFewestBuckets) {
  const GradientTask tasks[] = {{8, 1}, {8, 1}, {8, 1}, {8, 1}};
  const AllReduceCost model{0.01, 0.001};
  EXPECT_DOUBLE_EQ(cost(tasks, planEachGradient(4), model), 4.018);
  EXPECT_EQ(asVector(planOptimal(tasks, model)),
            (std::vector<unsigned>{3, 4}));
  EXPECT_DOUBLE_EQ(cost(tasks, {4}, model), 4.042);
}

// Where ranks take turns on the cores, each exchange also takes CPU time
// from the computation, but for the last bucket, which starts once the
// backward pass has ended: with 0.045 s of it per exchange, two buckets
// end at 4 + 0.045 = 4.045 s, later than one bucket's exchange (4.042 s),
// so the optimal plan merges everything; the unmerged plan ends at 4 + 3 *
// 0.045 = 4.135 s.
TEST(MergePlanner, OptimalCountsTheCoresBound) {
  const GradientTask tasks[] = {{8, 1}, {8, 1}, {8, 1}, {8, 1}};
  AllReduceCost model{0.01, 0.001};
  model.cpuStartup = 0.045;
  EXPECT_DOUBLE_EQ(cost(tasks, {3, 4}, model), 4.045);
  EXPECT_DOUBLE_EQ(cost(tasks, planEachGradient(4), model), 4.135);
  EXPECT_EQ(asVector(planOptimal(tasks, model)), (std::vector<unsigned>{4}));
  EXPECT_DOUBLE_EQ(cost(tasks, {4}, model), 4.042);
  // The CPU time per byte counts the bytes before the last bucket.
  model.cpuStartup = 0;
  model.cpuPerByte = 0.01;
  EXPECT_DOUBLE_EQ(cost(tasks, planEachGradient(4), model), 4.24);
  EXPECT_DOUBLE_EQ(cost(tasks, {3, 4}, model), 4.24);
  EXPECT_DOUBLE_EQ(cost(tasks, {4}, model), 4.042);
  EXPECT_EQ(asVector(planOptimal(tasks, model)), (std::vector<unsigned>{4}));
}

// The last bucket runs alone: it costs the timed all-reduces'
// interpolation, not the line fitted to the steps' exchanges (which shared
// the cores with the computation). With 1 + 0.1 s per byte in the steps
// and 0.5 s per 8 bytes timed alone, one bucket ends at 4 + 0.5 * 32 / 8
// = 6 s, against 4 + 1 + 3.2 = 8.2 s on the line.
TEST(MergePlanner, TheLastBucketRunsAlone) {
  const GradientTask tasks[] = {{8, 1}, {8, 1}, {8, 1}, {8, 1}};
  AllReduceCost model{1, 0.1, {{8, 0.5}, {16, 1.0}}};
  EXPECT_DOUBLE_EQ(model.time(32), 4.2);
  EXPECT_DOUBLE_EQ(model.aloneTime(32), 2);
  EXPECT_DOUBLE_EQ(cost(tasks, {4}, model), 6);
  // The first gradient in a bucket of its own ends at 2.8 s, within the
  // backward pass, and the last 24 bytes at 4 + 1.5 = 5.5 s.
  EXPECT_DOUBLE_EQ(cost(tasks, {1, 4}, model), 5.5);
  // With a line fitted to the steps' exchanges that ran alone, that line,
  // never below the timed all-reduces.
  model.aloneLine = CostLine{0.5, 0.05};
  EXPECT_DOUBLE_EQ(model.aloneTime(32), 2.1);
  EXPECT_DOUBLE_EQ(model.aloneTime(4), 0.7); // the timed: flat 0.5
  EXPECT_DOUBLE_EQ(cost(tasks, {4}, model), 6.1);
}

// An exchange still running when the backward pass ends runs alone from
// then on: what is left of it takes its share of the time alone. In the
// model above, gradients 1-2 start at 3 s and would take 2.6 s on the
// line; 1 / 2.6 of them is done at 4 s, and the rest takes 1.6 / 2.6 of
// the 1 s alone: the bucket ends at 4 + 8 / 13 s, and the last gradient
// 0.5 s later, which is the optimum. One bucket per gradient ends at 2.8,
// 4 + 0.5 / 3 (0.6 s left of 1.8 s), 4.5 + 1 / 6 and 5 + 1 / 6 s.
TEST(MergePlanner, ExchangesPastTheBackwardPassRunAlone) {
  const GradientTask tasks[] = {{8, 1}, {8, 1}, {8, 1}, {8, 1}};
  const AllReduceCost model{1, 0.1, {{8, 0.5}, {16, 1.0}}};
  EXPECT_DOUBLE_EQ(model.end(3, 16, 4), 4 + 8.0 / 13);
  EXPECT_DOUBLE_EQ(model.end(1, 16, 4), 3.6);   // done within the pass
  EXPECT_DOUBLE_EQ(model.end(4.5, 16, 4), 5.5); // alone throughout
  PlanTimeline each = simulatePlan(tasks, planEachGradient(4), model);
  EXPECT_DOUBLE_EQ(each.ends[0], 2.8);
  EXPECT_DOUBLE_EQ(each.ends[1], 4 + 0.5 / 3);
  EXPECT_DOUBLE_EQ(each.ends[2], 4.5 + 1.0 / 6);
  EXPECT_DOUBLE_EQ(each.commEnd(), 5 + 1.0 / 6);
  EXPECT_DOUBLE_EQ(cost(tasks, {1, 3, 4}, model), 4.5 + 8.0 / 13);
  EXPECT_EQ(asVector(planOptimal(tasks, model)),
            (std::vector<unsigned>{1, 3, 4}));
}

// Beside the backward pass, an exchange costs the line fitted to the
// steps' exchanges that ran within it: here 2.5 s + 0.05 s per byte (2.9 s
// for one gradient, 3.3 s for two), and alone the timed all-reduces (0.5 s
// for 8 bytes, 0.9 s for 16, 0.05 s per byte beyond). One bucket per
// gradient ends at 3.9, 4 + 0.5 * 2.8 / 2.9 (0.1 s of its 2.9 done), and
// 0.5 s apart after that: 5 + 1.4 / 2.9 s. Gradients 0-1 at 2 end at
// 4 + 0.9 * 1.3 / 3.3 and the rest 0.9 s later: the optimum, 4.9 + 1.17 /
// 3.3 s (on the steps' line it is {1, 3, 4}, at 4.5 + 0.9 * 1.6 / 2.6 s).
// MG-WFBP merges within the backward line's startup: each gradient is
// ready 1 s after the previous one, so it makes one bucket.
TEST(MergePlanner, ExchangesBesideTheBackwardPassCostTheBackwardLine) {
  const GradientTask tasks[] = {{8, 1}, {8, 1}, {8, 1}, {8, 1}};
  AllReduceCost model{1, 0.1, {{8, 0.5}, {16, 0.9}}};
  EXPECT_DOUBLE_EQ(cost(tasks, {1, 3, 4}, model), 4.5 + 0.9 * 1.6 / 2.6);
  EXPECT_EQ(asVector(planOptimal(tasks, model)),
            (std::vector<unsigned>{1, 3, 4}));
  model.backwardLine = CostLine{2.5, 0.05};
  EXPECT_DOUBLE_EQ(model.time(16), 3.3);
  EXPECT_DOUBLE_EQ(model.timeStartup(), 2.5);
  EXPECT_DOUBLE_EQ(cost(tasks, planEachGradient(4), model), 5 + 1.4 / 2.9);
  EXPECT_DOUBLE_EQ(cost(tasks, {2, 4}, model), 4.9 + 1.17 / 3.3);
  for (const MergePlan &plan : allPlans(4))
    EXPECT_GE(cost(tasks, plan, model), 4.9 + 1.17 / 3.3);
  EXPECT_EQ(asVector(planOptimal(tasks, model)), (std::vector<unsigned>{2, 4}));
  EXPECT_EQ(asVector(planMGWFBP(tasks, model)), (std::vector<unsigned>{4}));
  // Never below the exchange alone: the computation only takes the cores
  // from it.
  model.backwardLine = CostLine{0, 0};
  EXPECT_DOUBLE_EQ(model.time(16), 0.9); // the timed all-reduces
  model.aloneLine = CostLine{0.5, 0.1};
  EXPECT_DOUBLE_EQ(model.time(16), 2.1);
}

// The computing thread's calls to submit and wait for each bucket, 0.03 s
// each, come after the exchanges: one exchange per gradient ends at 4.018
// + 4 * 0.03 = 4.138 s, the best two buckets (3 gradients, then the last)
// at 4.018 + 0.06 = 4.078 s, one bucket at 4.042 + 0.03 = 4.072 s. Without
// them the two buckets are optimal.
TEST(MergePlanner, OptimalCountsTheCallersCpu) {
  const GradientTask tasks[] = {{8, 1}, {8, 1}, {8, 1}, {8, 1}};
  AllReduceCost model{0.01, 0.001};
  EXPECT_EQ(asVector(planOptimal(tasks, model)), (std::vector<unsigned>{3, 4}));
  model.callerCpu = 0.03;
  EXPECT_DOUBLE_EQ(cost(tasks, planEachGradient(4), model), 4.138);
  EXPECT_DOUBLE_EQ(cost(tasks, {3, 4}, model), 4.078);
  EXPECT_DOUBLE_EQ(cost(tasks, {4}, model), 4.072);
  EXPECT_EQ(asVector(planOptimal(tasks, model)), (std::vector<unsigned>{4}));
}

TEST(MergePlanner, OptimalEqualsBruteForceOnRandomInstances) {
  std::mt19937 rng(2026);
  std::uniform_int_distribution<unsigned> count(1, 11);
  std::lognormal_distribution<double> bytes(12, 2), backward(-6, 1.5);
  std::uniform_real_distribution<double> startup(1e-5, 5e-3),
      perByte(1e-10, 1e-8), share(0, 2);
  int greedyWorse = 0, coresBound = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<GradientTask> tasks(count(rng));
    for (GradientTask &task : tasks)
      task = {std::floor(bytes(rng)), backward(rng)};
    AllReduceCost model{startup(rng), perByte(rng)};
    // Half the instances on cores shared with the computation, a third
    // with the computing thread's calls per bucket.
    if (trial % 2) {
      model.cpuStartup = share(rng) * model.startup;
      model.cpuPerByte = share(rng) * model.perByte;
    }
    if (trial % 3 == 0)
      model.callerCpu = share(rng) * model.startup;
    // A quarter with timed all-reduces, which exchanges cost alone once
    // the backward pass has ended.
    if (trial % 4 == 1)
      model.measured = {{1024, share(rng) * model.startup},
                        {1 << 20, share(rng) * model.time(1 << 20)}};
    // A fifth with a line for the exchanges alone, above the steps' line
    // for some sizes in some of them.
    if (trial % 5 == 2) {
      model.aloneLine =
          CostLine{share(rng) * model.startup, share(rng) * model.perByte};
    }
    // A third with a line for the exchanges beside the backward pass, up
    // to 10 times the steps' startup.
    if (trial % 3 == 1) {
      model.backwardLine =
          CostLine{5 * share(rng) * model.startup, share(rng) * model.perByte};
    }
    const std::vector<MergePlan> plans = allPlans(tasks.size());
    double best = std::numeric_limits<double>::infinity();
    for (const MergePlan &plan : plans)
      best = std::min(best, cost(tasks, plan, model));
    size_t fewest = tasks.size();
    for (const MergePlan &plan : plans)
      if (cost(tasks, plan, model) <= best * (1 + 1e-12))
        fewest = std::min(fewest, plan.size());
    const MergePlan optimal = planOptimal(tasks, model);
    ASSERT_NEAR(cost(tasks, optimal, model), best, 1e-12 * best)
        << "trial " << trial;
    EXPECT_EQ(optimal.size(), fewest) << "trial " << trial;
    for (const MergePlan &plan :
         {planMGWFBP(tasks, model), planEachGradient(tasks.size()),
          planThreshold(tasks, 1 << 20), MergePlan{unsigned(tasks.size())}})
      EXPECT_GE(cost(tasks, plan, model), best * (1 - 1e-12))
          << "trial " << trial;
    greedyWorse += cost(tasks, planMGWFBP(tasks, model), model) >
                   best * (1 + 1e-9);
    coresBound += best > simulatePlan(tasks, optimal, model).commEnd() +
                             double(optimal.size()) * model.callerCpu;
  }
  // Random instances include cases where the greedy rule loses, and where
  // the cores' bound sets the optimum.
  EXPECT_GT(greedyWorse, 0);
  EXPECT_GT(coresBound, 0);
  std::printf("MG-WFBP worse than optimal on %d of 400 random instances, "
              "the cores' bound setting the optimum on %d\n",
              greedyWorse, coresBound);
}

} // namespace
