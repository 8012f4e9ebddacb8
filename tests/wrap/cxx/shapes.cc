#include "shapes.h"

#include <sstream>

namespace geo {

Circle::Circle(double r) : r_(r) {}
double Circle::area() const { return 3.0 * r_ * r_; }
std::string Circle::name() const { return "circle"; }

Rect::Rect(double w, double h) : w_(w), h_(h) {}
double Rect::area() const { return w_ * h_; }
std::string Rect::name() const { return "rect"; }

__attribute__((noinline)) static double check(double x)
{
	if (x < 0)
		throw BadShape("negative size " + std::to_string(x));
	return x;
}

std::unique_ptr<Shape> make(const std::string &spec)
{
	std::istringstream in(spec);
	std::string kind;
	double a = 0, b = 0;
	in >> kind >> a >> b;
	if (kind == "circle")
		return std::make_unique<Circle>(check(a));
	return std::make_unique<Rect>(check(a), check(b));
}

} // namespace geo
