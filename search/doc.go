package search
