// std::execution::par on a large vector (libstdc++'s parallel algorithms). Built with TBB's
// headers it runs on TBB; built with -D_GLIBCXX_USE_TBB_PAR_BACKEND=0 (or without TBB's headers)
// libstdc++'s serial backend runs it on the calling thread, whatever the policy says.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <execution>
#include <vector>

int main() {
    std::vector<double> v(20000000);
    for (size_t i = 0; i < v.size(); i++) v[i] = (double)(i * 7919 % 10007);
    std::for_each(std::execution::par, v.begin(), v.end(), [](double &x) { x = std::sqrt(x) * std::sin(x); });
    std::sort(std::execution::par, v.begin(), v.end()); // MARK sort
    printf("%f\n", v[v.size() / 2]);
}
