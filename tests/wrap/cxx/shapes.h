// A small C++ program of several files that the tests build with
// `ftpatch c++`: classes with virtual functions, a template, an
// exception thrown through traced calls and caught.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace geo {

class Shape {
public:
	virtual ~Shape() = default;
	virtual double area() const = 0;
	virtual std::string name() const = 0;
};

class Circle : public Shape {
public:
	explicit Circle(double r);
	double area() const override;
	std::string name() const override;

private:
	double r_;
};

class Rect : public Shape {
public:
	Rect(double w, double h);
	double area() const override;
	std::string name() const override;

private:
	double w_, h_;
};

// A shape with a negative size: thrown by make.
struct BadShape : std::runtime_error {
	using std::runtime_error::runtime_error;
};

std::unique_ptr<Shape> make(const std::string &spec);

template <typename T> T total(const std::vector<T> &v)
{
	T sum{};
	for (const T &x : v)
		sum += x;
	return sum;
}

} // namespace geo
