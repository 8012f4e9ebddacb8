#include <cstdio>

#include "shapes.h"

int main()
{
	const char *specs[] = {"circle 2", "rect 3 4", "rect -1 2", "circle 1"};
	std::vector<double> areas;
	int bad = 0;
	for (const char *spec : specs) {
		try {
			auto s = geo::make(spec);
			areas.push_back(s->area());
			std::printf("%s: %s of area %g\n", spec, s->name().c_str(), s->area());
		} catch (const geo::BadShape &e) {
			std::printf("%s: %s\n", spec, e.what());
			bad++;
		}
	}
	std::printf("total %g, %d bad\n", geo::total(areas), bad);
	return bad;
}
