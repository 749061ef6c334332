// Runs a torch_autograph function exported with AOTInductor, with no Python:
//   demo MODEL.pt2 TENSORS.txt
// TENSORS.txt holds the inputs and the expected output (see export_model.py); the program prints the
// output and exits 1 if it differs from the expected one.
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/torch.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

static torch::Tensor read_tensor(const std::string& text) {
  std::istringstream in(text);
  std::string kind;
  int64_t rank = 0;
  in >> kind >> rank;
  std::vector<int64_t> sizes(rank);
  for (auto& s : sizes) in >> s;
  std::vector<double> values;
  for (double v; in >> v;) values.push_back(v);
  auto t = torch::tensor(values, torch::kFloat64).reshape(sizes);
  return kind == "f" ? t.to(torch::kFloat32) : t.to(torch::kInt64);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: " << argv[0] << " MODEL.pt2 TENSORS.txt\n";
    return 2;
  }
  std::ifstream file(argv[2]);
  std::vector<torch::Tensor> tensors;
  for (std::string line; std::getline(file, line);) tensors.push_back(read_tensor(line));
  std::vector<torch::Tensor> inputs(tensors.begin(), tensors.end() - 1);
  torch::Tensor expected = tensors.back();

  torch::inductor::AOTIModelPackageLoader loader(argv[1]);
  std::vector<torch::Tensor> outputs = loader.run(inputs);

  std::cout << "output:\n" << outputs[0] << "\n";
  double diff = (outputs[0] - expected).abs().max().item<double>();
  std::cout << "max abs difference from Python: " << diff << "\n";
  return diff < 1e-4 ? 0 : 1;
}
