package lib

func F() int { return "not an int" }
