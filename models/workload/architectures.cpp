// Architecture definitions (see architectures.hpp). Each builder is a line-by-line port of the reference
// generator; `hw` arguments add the output spatial size for FLOP counting where it is tracked.
#include "models/workload/architectures.hpp"
#include "core/common/suggest.hpp"

#include <numeric>

namespace tp::models {

int64_t VariableSpec::elements() const
{
  return std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<int64_t>());
}

int64_t Architecture::parameters(bool trainable_only) const
{
  int64_t n = 0;
  for (const auto& l : layers)
    for (const auto& v : l.variables)
      if (v.trainable || !trainable_only) n += v.elements();
  return n;
}

size_t Architecture::variable_count() const
{
  size_t n = 0;
  for (const auto& l : layers)
    n += l.variables.size();
  return n;
}

double Architecture::forward_flops() const
{
  double f = 0;
  for (const auto& l : layers)
    f += l.forward_flops;
  return f;
}

namespace {

struct Bn {
  bool gamma = false, beta = false, stats = false;
};
constexpr Bn kNoBn{};
constexpr Bn kBnFull{true, true, true};  // Keras ResNet / tf_cnn ResNet: gamma, beta, moving mean/variance
constexpr Bn kBnBeta{false, true, true}; // Keras InceptionV3: scale=False

struct Builder {
  std::vector<ArchitectureLayer> layers;

  /// A k1 x k2 convolution cin -> cout with optional bias and batch norm; `hw` = output height = width (0: not
  /// tracked).
  void conv(const std::string& name, int k1, int k2, int64_t cin, int64_t cout, bool bias = true, Bn bn = kNoBn,
            int hw = 0)
  {
    ArchitectureLayer l;
    l.name = name;
    l.variables.push_back({name + "/kernel", {k1, k2, cin, cout}, true});
    if (bias) l.variables.push_back({name + "/bias", {cout}, true});
    if (bn.gamma) l.variables.push_back({name + "/gamma", {cout}, true});
    if (bn.beta) l.variables.push_back({name + "/beta", {cout}, true});
    if (bn.stats) {
      l.variables.push_back({name + "/moving_mean", {cout}, false});
      l.variables.push_back({name + "/moving_variance", {cout}, false});
    }
    l.forward_flops = 2.0 * k1 * k2 * double(cin) * double(cout) * double(hw) * double(hw);
    layers.push_back(std::move(l));
  }
  void fc(const std::string& name, int64_t in, int64_t out)
  {
    ArchitectureLayer l;
    l.name = name;
    l.variables.push_back({name + "/kernel", {in, out}, true});
    l.variables.push_back({name + "/bias", {out}, true});
    l.forward_flops = 2.0 * double(in) * double(out);
    layers.push_back(std::move(l));
  }
};

Architecture vgg16(int nc)
{
  Builder b;
  int64_t cin = 3;
  const int channels[] = {64, 64, 128, 128, 256, 256, 256, 512, 512, 512, 512, 512, 512};
  const int hw[] = {224, 224, 112, 112, 56, 56, 56, 28, 28, 28, 14, 14, 14};
  for (int i = 0; i < 13; ++i) {
    b.conv("conv" + std::to_string(i + 1), 3, 3, cin, channels[i], true, kNoBn, hw[i]);
    cin = channels[i];
  }
  b.fc("fc6", 7 * 7 * 512, 4096);
  b.fc("fc7", 4096, 4096);
  b.fc("fc8", 4096, nc);
  return {"vgg16", "VGG16 (Keras = tf_cnn_benchmarks), " + std::to_string(nc) + " classes", std::move(b.layers)};
}

Architecture alexnet_tfcnn(int nc)
{
  // tf_cnn_benchmarks alexnet_model.py: 227x227 input (224 + 3), 64-192-384-384-256.
  Builder b;
  b.conv("conv1", 11, 11, 3, 64, true, kNoBn, 55);
  b.conv("conv2", 5, 5, 64, 192, true, kNoBn, 27);
  b.conv("conv3", 3, 3, 192, 384, true, kNoBn, 13);
  b.conv("conv4", 3, 3, 384, 384, true, kNoBn, 13);
  b.conv("conv5", 3, 3, 384, 256, true, kNoBn, 13);
  b.fc("fc6", 256 * 6 * 6, 4096);
  b.fc("fc7", 4096, 4096);
  b.fc("fc8", 4096, nc);
  return {"alexnet", "AlexNet (tf_cnn_benchmarks, 64-192-384-384-256), " + std::to_string(nc) + " classes",
          std::move(b.layers)};
}

Architecture resnet(const std::string& name, const int blocks[4], int nc, bool bias, const std::string& variant)
{
  Builder b;
  b.conv("conv1", 7, 7, 3, 64, bias, kBnFull, 112);
  int64_t cin = 64;
  const int mids[4] = {64, 128, 256, 512};
  const int hws[4] = {56, 28, 14, 7};
  for (int st = 0; st < 4; ++st) {
    const int64_t mid = mids[st], out = mid * 4;
    for (int blk = 0; blk < blocks[st]; ++blk) {
      const std::string p = "res" + std::to_string(st + 2) + "_" + std::to_string(blk);
      if (blk == 0) b.conv(p + "/short", 1, 1, cin, out, bias, kBnFull, hws[st]);
      b.conv(p + "/a", 1, 1, cin, mid, bias, kBnFull, hws[st]);
      b.conv(p + "/b", 3, 3, mid, mid, bias, kBnFull, hws[st]);
      b.conv(p + "/c", 1, 1, mid, out, bias, kBnFull, hws[st]);
      cin = out;
    }
  }
  b.fc("fc", 2048, nc);
  return {name, variant, std::move(b.layers)};
}

Architecture inception3(int nc)
{
  Builder b;
  int n = 0;
  auto cb = [&](int64_t ci, int64_t co, int k1, int k2) {
    b.conv("conv" + std::to_string(++n), k1, k2, ci, co, false, kBnBeta);
  };
  cb(3, 32, 3, 3), cb(32, 32, 3, 3), cb(32, 64, 3, 3), cb(64, 80, 1, 1), cb(80, 192, 3, 3);
  int64_t c = 192;
  for (int64_t p : {32, 64, 64}) {
    cb(c, 64, 1, 1), cb(c, 48, 1, 1), cb(48, 64, 5, 5), cb(c, 64, 1, 1), cb(64, 96, 3, 3), cb(96, 96, 3, 3),
        cb(c, p, 1, 1);
    c = 224 + p;
  }
  cb(c, 384, 3, 3), cb(c, 64, 1, 1), cb(64, 96, 3, 3), cb(96, 96, 3, 3);
  c = 480 + c;
  for (int64_t k : {128, 160, 160, 192}) {
    cb(c, 192, 1, 1), cb(c, k, 1, 1), cb(k, k, 1, 7), cb(k, 192, 7, 1), cb(c, k, 1, 1), cb(k, k, 7, 1), cb(k, k, 1, 7),
        cb(k, k, 7, 1), cb(k, 192, 1, 7), cb(c, 192, 1, 1);
    c = 768;
  }
  cb(c, 192, 1, 1), cb(192, 320, 3, 3), cb(c, 192, 1, 1), cb(192, 192, 1, 7), cb(192, 192, 7, 1), cb(192, 192, 3, 3);
  c = 1280;
  for (int i = 0; i < 2; ++i) {
    cb(c, 320, 1, 1), cb(c, 384, 1, 1), cb(384, 384, 1, 3), cb(384, 384, 3, 1), cb(c, 448, 1, 1), cb(448, 384, 3, 3),
        cb(384, 384, 1, 3), cb(384, 384, 3, 1), cb(c, 192, 1, 1);
    c = 2048;
  }
  b.fc("fc", 2048, nc);
  return {"inception3", "InceptionV3 (Keras: no conv bias, batch norm beta only), " + std::to_string(nc) + " classes",
          std::move(b.layers)};
}

Architecture googlenet_tfcnn(int nc)
{
  Builder b;
  b.conv("conv1", 7, 7, 3, 64, true, kNoBn, 112);
  b.conv("conv2", 1, 1, 64, 64, true, kNoBn, 56);
  b.conv("conv3", 3, 3, 64, 192, true, kNoBn, 56);
  int64_t c = 192;
  struct Mod {
    int k, l, m, n, p, q;
  };
  const Mod mods[] = {{64, 96, 128, 16, 32, 32},     {128, 128, 192, 32, 96, 64},   {192, 96, 208, 16, 48, 64},
                      {160, 112, 224, 24, 64, 64},   {128, 128, 256, 24, 64, 64},   {112, 144, 288, 32, 64, 64},
                      {256, 160, 320, 32, 128, 128}, {256, 160, 320, 32, 128, 128}, {384, 192, 384, 48, 128, 128}};
  const int hw[] = {28, 28, 14, 14, 14, 14, 14, 7, 7};
  for (int i = 0; i < 9; ++i) {
    const Mod& m = mods[i];
    const std::string s = "incept" + std::to_string(i);
    b.conv(s + "a", 1, 1, c, m.k, true, kNoBn, hw[i]);
    b.conv(s + "b", 1, 1, c, m.l, true, kNoBn, hw[i]);
    b.conv(s + "c", 3, 3, m.l, m.m, true, kNoBn, hw[i]);
    b.conv(s + "d", 1, 1, c, m.n, true, kNoBn, hw[i]);
    b.conv(s + "e", 5, 5, m.n, m.p, true, kNoBn, hw[i]);
    b.conv(s + "f", 1, 1, c, m.q, true, kNoBn, hw[i]);
    c = m.k + m.m + m.p + m.q;
  }
  b.fc("fc", 1024, nc);
  return {"googlenet",
          "GoogLeNet (tf_cnn_benchmarks: conv + bias, no batch norm, no aux heads), " + std::to_string(nc) + " classes",
          std::move(b.layers)};
}

} // namespace

std::vector<std::string> architecture_names()
{
  return {"vgg16",          "alexnet",         "resnet50",        "resnet101",  "resnet152",
          "resnet50-keras", "resnet101-keras", "resnet152-keras", "inception3", "googlenet"};
}

Result<Architecture> architecture(const std::string& name)
{
  static const int r50[4] = {3, 4, 6, 3}, r101[4] = {3, 4, 23, 3}, r152[4] = {3, 8, 36, 3};
  const std::string tfcnn =
      "tf_cnn_benchmarks ResNet v1: no conv bias, batch norm gamma/beta + moving stats, 1001 classes";
  const std::string keras = "Keras ResNet v1: conv bias, batch norm gamma/beta + moving stats, 1000 classes";
  if (name == "vgg16") return vgg16(1000);
  if (name == "alexnet") return alexnet_tfcnn(1001);
  if (name == "resnet50") return resnet(name, r50, 1001, false, "ResNet-50 (" + tfcnn + ")");
  if (name == "resnet101") return resnet(name, r101, 1001, false, "ResNet-101 (" + tfcnn + ")");
  if (name == "resnet152") return resnet(name, r152, 1001, false, "ResNet-152 (" + tfcnn + ")");
  if (name == "resnet50-keras") return resnet(name, r50, 1000, true, "ResNet-50 (" + keras + ")");
  if (name == "resnet101-keras") return resnet(name, r101, 1000, true, "ResNet-101 (" + keras + ")");
  if (name == "resnet152-keras") return resnet(name, r152, 1000, true, "ResNet-152 (" + keras + ")");
  if (name == "inception3") return inception3(1000);
  if (name == "googlenet") return googlenet_tfcnn(1001);
  return Error::at("", "model", one_of_names(name, architecture_names(), 40), unknown_name(name, architecture_names()));
}

} // namespace tp::models
